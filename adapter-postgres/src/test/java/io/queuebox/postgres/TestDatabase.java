package io.queuebox.postgres;

import io.queuebox.jdbc.testing.ReusingDataSource;
import io.queuebox.testkit.services.TestServices;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.UUID;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;

/** A schema of its own on the real PostgreSQL for one test class, dropped afterwards. */
final class TestDatabase implements AutoCloseable {

    final DataSource dataSource;
    final String schema;

    private TestDatabase(DataSource dataSource, String schema) {
        this.dataSource = dataSource;
        this.schema = schema;
    }

    static TestDatabase withFreshSchema(String prefix) {
        PGSimpleDataSource dataSource = new PGSimpleDataSource();
        dataSource.setURL(TestServices.postgresUrl());
        String schema = ("qb_" + prefix + "_" + UUID.randomUUID().toString().substring(0, 8)).toLowerCase(Locale.ROOT);
        return new TestDatabase(dataSource, schema);
    }

    /**
     * Settings on this schema, with claims that write leases: what most of these tests were written against. The
     * tests of claims that hold row locks (the default) ask for them with {@code holdRowLocks(true)}.
     */
    PostgresOutboxSettings.Builder settings() {
        return PostgresOutboxSettings.builder().schema(schema).holdRowLocks(false);
    }

    void execute(String sql) {
        try (Connection connection = dataSource.getConnection(); Statement statement = connection.createStatement()) {
            statement.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException(sql + ": " + e.getMessage(), e);
        }
    }

    /**
     * Gives the outbox's {@code aggregate_id} a case-insensitive (nondeterministic) collation, as if the table had been
     * created ahead with it: the trigger that fixes a row's aggregate depends on the column, so it goes while the
     * column changes and the schema scripts put it back.
     */
    void caseInsensitiveAggregateIds(PostgresOutboxSettings settings) {
        execute("CREATE COLLATION \"" + schema + "\".ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)");
        execute("DROP TRIGGER " + settings.table() + "_order_fixed ON " + settings.qualifiedTable());
        execute("ALTER TABLE " + settings.qualifiedTable() + " ALTER COLUMN aggregate_id TYPE text COLLATE \"" + schema + "\".ci");
        PostgresOutbox.createSchema(dataSource, settings);
    }

    /** Reused connections to {@code url}, so that a store call does not pay for a new PostgreSQL backend. */
    static ReusingDataSource reusing(String url, String applicationName) {
        PGSimpleDataSource target = new PGSimpleDataSource();
        target.setURL(url);
        target.setApplicationName(applicationName);
        return new ReusingDataSource(target);
    }

    /**
     * Ends the claims a test left holding rows on this schema (open transactions of held claims), as the end of
     * their relay's process would, so that dropping the schema does not wait for their idle timeout.
     */
    void endHeldClaims() {
        execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'"
                + " AND pid <> pg_backend_pid() AND query LIKE '%" + schema + "%'");
    }

    @Override
    public void close() {
        execute("DROP SCHEMA IF EXISTS \"" + schema + "\" CASCADE");
    }

    /**
     * A row written by plain SQL, as a hand-written migration or another tool might: aggregate type
     * {@code order}, payload {@code {}}, and the given aggregate id, event type and headers (JSON text).
     */
    UUID insertRow(PostgresOutboxSettings settings, String aggregateId, String eventType, String headers) {
        UUID id = UUID.randomUUID();
        execute("INSERT INTO " + settings.qualifiedTable() + " (event_id, aggregate_type, aggregate_id, event_type,"
                + " payload, headers) VALUES ('" + id + "', 'order', '" + aggregateId + "', '" + eventType
                + "', '\\x7b7d', '" + headers + "')");
        return id;
    }

    /**
     * Takes the turn that held ordered claims on {@code settings}' table take among processes (OutboxSql
     * CHOICE_TURN_LOCK_KEY), as another relay's claim would, on a new connection: the turn lasts until it is closed.
     */
    Connection anotherRelaysTurn(PostgresOutboxSettings settings) throws SQLException {
        Connection other = dataSource.getConnection();
        try (Statement statement = other.createStatement()) {
            statement.execute("SELECT pg_advisory_lock(" + OutboxSql.CHOICE_TURN_LOCK_KEY + ", '"
                    + settings.qualifiedTable() + "'::regclass::oid::integer)");
        } catch (SQLException e) {
            other.close();
            throw e;
        }
        return other;
    }

    /** One column of one row of {@code settings}' table, as text (null for SQL NULL). */
    String columnOf(PostgresOutboxSettings settings, UUID eventId, String column) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
             java.sql.ResultSet rs = s.executeQuery("SELECT " + column + "::text FROM " + settings.qualifiedTable()
                     + " WHERE event_id = '" + eventId + "'")) {
            rs.next();
            return rs.getString(1);
        }
    }

    /** Whether anybody holds a row lock on the row (a FOR UPDATE SKIP LOCKED from outside tells). */
    boolean lockedByAnyone(PostgresOutboxSettings settings, UUID eventId) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            try (java.sql.ResultSet rs = s.executeQuery("SELECT event_id FROM " + settings.qualifiedTable()
                    + " WHERE event_id = '" + eventId + "' FOR UPDATE SKIP LOCKED")) {
                boolean free = rs.next();
                c.rollback();
                return !free;
            }
        }
    }
}
