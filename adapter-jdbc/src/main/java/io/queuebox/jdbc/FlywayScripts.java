package io.queuebox.jdbc;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * An adapter's shipped Flyway scripts, rendered with the placeholders {@code queuebox_schema} and
 * {@code queuebox_table} filled in, and run without Flyway. The adapter says how a rendered script splits
 * into statements (PostgreSQL: the whole script; SQL Server: its {@code GO} batches).
 */
public final class FlywayScripts {

    private static final Pattern PLACEHOLDER = Pattern.compile("\\$\\{([a-z_]+)}");

    private final ClassLoader classLoader;
    private final String location;
    private final List<String> scripts;
    private final Function<String, List<String>> statements;

    /** {@code classLoader} is the adapter's, so its scripts are found wherever the adapter's jar is. */
    public FlywayScripts(ClassLoader classLoader, String location, List<String> scripts,
            Function<String, List<String>> statements) {
        this.classLoader = Objects.requireNonNull(classLoader, "classLoader");
        this.location = Objects.requireNonNull(location, "location");
        this.scripts = List.copyOf(scripts);
        this.statements = Objects.requireNonNull(statements, "statements");
    }

    public String render(String script, String schema, String table) {
        String text = read(location + "/" + script);
        Matcher matcher = PLACEHOLDER.matcher(text);
        StringBuilder out = new StringBuilder();
        while (matcher.find()) {
            String value = switch (matcher.group(1)) {
                case "queuebox_schema" -> schema;
                case "queuebox_table" -> table;
                default -> throw new IllegalStateException(
                        "unknown placeholder " + matcher.group() + " in " + script);
            };
            matcher.appendReplacement(out, Matcher.quoteReplacement(value));
        }
        matcher.appendTail(out);
        return out.toString();
    }

    /** Every script, rendered, in order; one transaction. */
    public void apply(DataSource dataSource, String schema, String table) {
        try (Connection connection = dataSource.getConnection()) {
            boolean autoCommit = connection.getAutoCommit();
            connection.setAutoCommit(false);
            try (Statement statement = connection.createStatement()) {
                for (String script : scripts) {
                    for (String sql : statements.apply(render(script, schema, table))) {
                        statement.execute(sql);
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
            throw new IllegalStateException("could not create the outbox schema for " + schema + "." + table
                    + ": " + e.getMessage(), e);
        }
    }

    private String read(String resource) {
        try (InputStream in = classLoader.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("missing resource " + resource);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
