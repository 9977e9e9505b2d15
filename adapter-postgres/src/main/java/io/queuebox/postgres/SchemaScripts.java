package io.queuebox.postgres;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/** Renders the shipped Flyway scripts with their placeholders filled in, for use without Flyway. */
final class SchemaScripts {

    static final String LOCATION = "db/queuebox/postgres";
    static final List<String> SCRIPTS = List.of("V1__queuebox_outbox.sql");

    private static final Pattern PLACEHOLDER = Pattern.compile("\\$\\{([a-z_]+)}");

    private SchemaScripts() {
    }

    static String render(String script, PostgresOutboxSettings settings) {
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

    static void apply(DataSource dataSource, PostgresOutboxSettings settings) {
        try (Connection connection = dataSource.getConnection()) {
            boolean autoCommit = connection.getAutoCommit();
            connection.setAutoCommit(false);
            try (Statement statement = connection.createStatement()) {
                for (String script : SCRIPTS) {
                    statement.execute(render(script, settings));
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
