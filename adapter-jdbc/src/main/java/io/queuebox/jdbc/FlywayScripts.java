package io.queuebox.jdbc;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * An adapter's shipped Flyway scripts, rendered with the placeholders {@code queuebox_schema} and
 * {@code queuebox_table} (or any other set of placeholders, see {@link #render(String, Map)}) filled in, and run
 * without Flyway. The adapter says how a rendered script splits
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
        return render(script, outboxPlaceholders(schema, table));
    }

    /**
     * {@code script} with every {@code ${name}} replaced by {@code placeholders.get(name)}; a placeholder without a
     * value is an {@link IllegalStateException}, so a script never reaches the database half rendered.
     */
    public String render(String script, Map<String, String> placeholders) {
        String text = read(location + "/" + script);
        Matcher matcher = PLACEHOLDER.matcher(text);
        StringBuilder out = new StringBuilder();
        while (matcher.find()) {
            String value = placeholders.get(matcher.group(1));
            if (value == null) {
                throw new IllegalStateException("unknown placeholder " + matcher.group() + " in " + script);
            }
            matcher.appendReplacement(out, Matcher.quoteReplacement(value));
        }
        matcher.appendTail(out);
        return out.toString();
    }

    /** Every script, rendered, in order; one transaction. */
    public void apply(DataSource dataSource, String schema, String table) {
        apply(dataSource, outboxPlaceholders(schema, table), "the outbox schema for " + schema + "." + table);
    }

    /** Every script, rendered with {@code placeholders}, in order; one transaction. {@code what} names it in errors. */
    public void apply(DataSource dataSource, Map<String, String> placeholders, String what) {
        try (Connection connection = dataSource.getConnection()) {
            boolean autoCommit = connection.getAutoCommit();
            connection.setAutoCommit(false);
            try (Statement statement = connection.createStatement()) {
                for (String script : scripts) {
                    for (String sql : statements.apply(render(script, placeholders))) {
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
            throw new IllegalStateException("could not create " + what + ": " + e.getMessage(), e);
        }
    }

    private static Map<String, String> outboxPlaceholders(String schema, String table) {
        return Map.of("queuebox_schema", schema, "queuebox_table", table);
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
