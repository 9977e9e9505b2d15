package io.queuebox.sqlserver;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/** Renders the shipped Flyway scripts with their placeholders filled in, and runs them without Flyway. */
final class SchemaScripts {

    static final String LOCATION = "db/queuebox/sqlserver";
    static final List<String> SCRIPTS = List.of("V1__queuebox_outbox.sql");

    private static final Pattern PLACEHOLDER = Pattern.compile("\\$\\{([a-z_]+)}");
    /** Flyway's batch separator for SQL Server: GO alone on its line. */
    private static final Pattern BATCH_SEPARATOR = Pattern.compile("(?im)^\\s*GO\\s*$");

    private SchemaScripts() {
    }

    static String render(String script, SqlServerOutboxSettings settings) {
        String text = read(LOCATION + "/" + script);
        Matcher matcher = PLACEHOLDER.matcher(text);
        StringBuilder out = new StringBuilder();
        while (matcher.find()) {
            String value = switch (matcher.group(1)) {
                case "queuebox_schema" -> settings.schema();
                case "queuebox_table" -> settings.table();
                default -> throw new IllegalStateException(
                        "unknown placeholder " + matcher.group() + " in " + script);
            };
            matcher.appendReplacement(out, Matcher.quoteReplacement(value));
        }
        matcher.appendTail(out);
        return out.toString();
    }

    /** The batches of a rendered script, without the GO separators and without empty batches. */
    static List<String> batches(String renderedScript) {
        List<String> batches = new ArrayList<>();
        for (String batch : BATCH_SEPARATOR.split(renderedScript)) {
            if (!withoutComments(batch).isBlank()) {
                batches.add(batch.strip());
            }
        }
        return batches;
    }

    static void apply(DataSource dataSource, SqlServerOutboxSettings settings) {
        try (Connection connection = dataSource.getConnection()) {
            boolean autoCommit = connection.getAutoCommit();
            connection.setAutoCommit(false);
            try (Statement statement = connection.createStatement()) {
                for (String script : SCRIPTS) {
                    for (String batch : batches(render(script, settings))) {
                        statement.execute(batch);
                    }
                }
                connection.commit();
            } catch (SQLException e) {
                connection.rollback();
                throw e;
            } finally {
                connection.setAutoCommit(autoCommit);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("could not create the outbox schema for " + settings.displayName()
                    + ": " + e.getMessage(), e);
        }
    }

    private static String withoutComments(String batch) {
        return batch.replaceAll("(?m)--.*$", "");
    }

    private static String read(String resource) {
        try (InputStream in = SchemaScripts.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("missing resource " + resource);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
