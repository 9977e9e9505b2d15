package io.queuebox.inbox;

import io.queuebox.testkit.services.TestServices;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.UUID;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;

/** A schema of its own on the real PostgreSQL for one test class, with the inbox table in it; dropped afterwards. */
public final class InboxTestDatabase implements AutoCloseable {

    public final PGSimpleDataSource dataSource;
    public final String schema;
    public final JdbcInbox inbox;

    private InboxTestDatabase(PGSimpleDataSource dataSource, String schema) {
        this.dataSource = dataSource;
        this.schema = schema;
        this.inbox = JdbcInbox.create(InboxSettings.builder(InboxDatabase.POSTGRESQL).schema(schema).build());
    }

    public static InboxTestDatabase withFreshSchema(String prefix) {
        PGSimpleDataSource dataSource = new PGSimpleDataSource();
        dataSource.setURL(TestServices.postgresUrl());
        dataSource.setApplicationName("queuebox-inbox-test");
        String schema = ("qb_" + prefix + "_" + UUID.randomUUID().toString().substring(0, 8)).toLowerCase(Locale.ROOT);
        InboxTestDatabase database = new InboxTestDatabase(dataSource, schema);
        database.inbox.createSchema(dataSource);
        return database;
    }

    /** The table a consumer writes its business effect to: one row per applied event, without a unique key of its own. */
    public String createEffectTable(String name) {
        String table = "\"" + schema + "\".\"" + name + "\"";
        execute("CREATE TABLE " + table + " (event_id uuid NOT NULL, aggregate_id text NOT NULL, handled_by text,"
                + " seq bigint GENERATED ALWAYS AS IDENTITY)");
        return table;
    }

    /** A fresh business table {@code name} and its reader. */
    public Effects effects(String name) {
        return new Effects(dataSource, createEffectTable(name));
    }

    String inboxTable() {
        return "\"" + schema + "\".\"" + InboxSettings.DEFAULT_TABLE + "\"";
    }

    public void execute(String sql) {
        try (Connection connection = dataSource.getConnection(); Statement statement = connection.createStatement()) {
            statement.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException(sql + ": " + e.getMessage(), e);
        }
    }

    public long count(String sql) {
        try (Connection connection = dataSource.getConnection(); Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery(sql)) {
            rows.next();
            return rows.getLong(1);
        } catch (SQLException e) {
            throw new IllegalStateException(sql + ": " + e.getMessage(), e);
        }
    }

    DataSource dataSource() {
        return dataSource;
    }

    @Override
    public void close() {
        execute("DROP SCHEMA IF EXISTS \"" + schema + "\" CASCADE");
    }
}
