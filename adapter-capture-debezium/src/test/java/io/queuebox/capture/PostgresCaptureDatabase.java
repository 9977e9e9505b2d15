package io.queuebox.capture;

import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.ports.CaptureMode;
import io.queuebox.ports.CaptureSettings;
import io.queuebox.testkit.services.TestServices;
import java.net.URI;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Locale;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * A database of its own on the test PostgreSQL server, with a minimal outbox table and a publication
 * on it, for capture tests. Dropping it drops the replication slots the tests created first, because a
 * slot nobody reads holds WAL forever.
 */
final class PostgresCaptureDatabase implements AutoCloseable {

    final String database;
    final String host;
    final int port;
    final String user;
    private final String serverUrl;

    PostgresCaptureDatabase() throws SQLException {
        serverUrl = TestServices.postgresUrl();
        URI uri = URI.create(serverUrl.substring("jdbc:".length()));
        host = uri.getHost();
        port = uri.getPort() < 0 ? 5432 : uri.getPort();
        user = queryParam(uri.getQuery(), "user", "postgres");
        database = "qb_capture_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        try (Connection admin = DriverManager.getConnection(serverUrl); Statement st = admin.createStatement()) {
            if (!"logical".equals(single(st, "SHOW wal_level"))) {
                TestServices.missing(TestServices.POSTGRES,
                        "capture tests need wal_level=logical (ALTER SYSTEM SET wal_level = logical, then restart)");
            }
            st.execute("CREATE DATABASE " + database);
        }
        try (Connection c = connect(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE public.queuebox_outbox (event_id uuid PRIMARY KEY, aggregate_id text NOT NULL,"
                    + " payload bytea NOT NULL, headers jsonb NOT NULL DEFAULT '{}', status text NOT NULL DEFAULT 'PENDING')");
            st.execute("CREATE TABLE public.unrelated (id serial PRIMARY KEY, note text)");
            st.execute("CREATE PUBLICATION queuebox_pub FOR TABLE public.queuebox_outbox WITH (publish = 'insert')");
        }
    }

    Connection connect() throws SQLException {
        return DriverManager.getConnection("jdbc:postgresql://" + host + ":" + port + "/" + database + "?user=" + user);
    }

    CaptureSettings settings(String slot, Path stateDirectory) {
        return new CaptureSettings(true, CaptureMode.POSTGRES_LOGICAL,
                new CaptureFingerprint(slot, "queuebox_pub", "public", "queuebox_outbox", host, database), port,
                stateDirectory.toString(), Duration.ofSeconds(30));
    }

    /** Inserts {@code rows} outbox rows, one transaction each; answers their event ids. */
    List<UUID> insert(int rows) throws SQLException {
        return insert(rows, true);
    }

    /** Inserts {@code rows} rows in one transaction: the log reports them together, at its commit. */
    List<UUID> insertInOneTransaction(int rows) throws SQLException {
        return insert(rows, false);
    }

    private List<UUID> insert(int rows, boolean eachOnItsOwn) throws SQLException {
        List<UUID> ids = new ArrayList<>();
        try (Connection c = connect(); Statement st = c.createStatement()) {
            c.setAutoCommit(eachOnItsOwn);
            for (int i = 0; i < rows; i++) {
                UUID id = UUID.randomUUID();
                st.execute("INSERT INTO queuebox_outbox (event_id, aggregate_id, payload) VALUES ('"
                        + id + "', 'agg-" + i + "', '\\x00')");
                ids.add(id);
            }
            if (!eachOnItsOwn) {
                c.commit();
            }
        }
        return ids;
    }

    int serverVersionNum() throws SQLException {
        try (Connection c = connect(); Statement st = c.createStatement()) {
            return Integer.parseInt(single(st, "SHOW server_version_num"));
        }
    }

    void execute(String sql) throws SQLException {
        try (Connection c = connect(); Statement st = c.createStatement()) {
            st.execute(sql);
        }
    }

    boolean slotExists(String slot) throws SQLException {
        try (Connection admin = DriverManager.getConnection(serverUrl); Statement st = admin.createStatement()) {
            return single(st, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '" + slot + "'").equals("1");
        }
    }

    @Override
    public void close() throws SQLException {
        try (Connection admin = DriverManager.getConnection(serverUrl); Statement st = admin.createStatement()) {
            st.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots"
                    + " WHERE database = '" + database + "' AND active_pid IS NOT NULL");
            st.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
                    + " WHERE database = '" + database + "' AND NOT active");
            st.execute("DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
        }
    }

    private static String single(Statement st, String sql) throws SQLException {
        try (var rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        }
    }

    private static String queryParam(String query, String name, String fallback) {
        if (query == null) {
            return fallback;
        }
        for (String pair : query.split("&")) {
            String[] kv = pair.split("=", 2);
            if (kv.length == 2 && kv[0].toLowerCase(Locale.ROOT).equals(name)) {
                return kv[1];
            }
        }
        return fallback;
    }
}
