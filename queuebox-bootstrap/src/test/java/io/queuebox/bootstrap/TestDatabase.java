package io.queuebox.bootstrap;

import io.queuebox.ports.OutboxEvent;
import io.queuebox.postgres.PostgresOutbox;
import io.queuebox.postgres.PostgresOutboxSettings;
import io.queuebox.testkit.services.TestServices;
import java.nio.charset.StandardCharsets;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.UUID;

/** A fresh PostgreSQL database for one test class, on the server TestServices finds; dropped on close. */
public final class TestDatabase implements AutoCloseable {

    private final String serverUrl;
    private final String name;

    private TestDatabase(String serverUrl, String name) {
        this.serverUrl = serverUrl;
        this.name = name;
    }

    public static TestDatabase create(String purpose) {
        String serverUrl = TestServices.postgresUrl();
        String name = ("qb_" + purpose + "_" + UUID.randomUUID().toString().substring(0, 8)).toLowerCase(Locale.ROOT);
        try (Connection connection = DriverManager.getConnection(serverUrl); Statement statement = connection.createStatement()) {
            statement.execute("CREATE DATABASE " + name);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot create test database " + name, e);
        }
        return new TestDatabase(serverUrl, name);
    }

    /** The JDBC URL of the new database, with the server URL's parameters (user) kept. */
    public String url() {
        int query = serverUrl.indexOf('?');
        String base = query < 0 ? serverUrl : serverUrl.substring(0, query);
        String params = query < 0 ? "" : serverUrl.substring(query);
        return base.substring(0, base.lastIndexOf('/') + 1) + name + params;
    }

    /** Writes {@code count} events of three aggregates (order-0, order-1, order-2) in one transaction. */
    public List<OutboxEvent> writeEvents(int count) throws SQLException {
        List<OutboxEvent> events = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            events.add(new OutboxEvent(UUID.randomUUID(), "order", "order-" + (i % 3), "OrderPlaced", null,
                    ("{\"n\":" + i + "}").getBytes(StandardCharsets.UTF_8), null, Map.of()));
        }
        try (Connection connection = DriverManager.getConnection(url())) {
            connection.setAutoCommit(false);
            PostgresOutbox.jdbcWriter(PostgresOutboxSettings.defaults()).enqueueAll(connection, events);
            connection.commit();
        }
        return events;
    }

    /** Rows of {@code table} matching {@code where}. */
    public long count(String table, String where) throws SQLException {
        try (Connection connection = DriverManager.getConnection(url());
             Statement statement = connection.createStatement();
             ResultSet rows = statement.executeQuery("SELECT count(*) FROM " + table + " WHERE " + where)) {
            rows.next();
            return rows.getLong(1);
        }
    }

    /** The database's name. */
    public String name() {
        return name;
    }

    /** Runs each statement in the database, as the server URL's user. */
    public void execute(String... statements) throws SQLException {
        try (Connection connection = DriverManager.getConnection(url()); Statement statement = connection.createStatement()) {
            for (String sql : statements) {
                statement.execute(sql);
            }
        }
    }

    /** The first column of every row {@code query} answers, as text. */
    public List<String> strings(String query) throws SQLException {
        List<String> values = new ArrayList<>();
        try (Connection connection = DriverManager.getConnection(url());
             Statement statement = connection.createStatement();
             ResultSet rows = statement.executeQuery(query)) {
            while (rows.next()) {
                values.add(rows.getString(1));
            }
        }
        return values;
    }

    /** The last_error of one row of an outbox {@code table}. */
    public String lastError(String table, UUID eventId) throws SQLException {
        List<String> errors = strings("SELECT last_error FROM " + table + " WHERE event_id = '" + eventId + "'");
        return errors.isEmpty() ? null : errors.get(0);
    }

    @Override
    public void close() {
        try (Connection connection = DriverManager.getConnection(serverUrl); Statement statement = connection.createStatement()) {
            statement.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
        } catch (SQLException e) {
            throw new IllegalStateException("cannot drop test database " + name, e);
        }
    }
}
