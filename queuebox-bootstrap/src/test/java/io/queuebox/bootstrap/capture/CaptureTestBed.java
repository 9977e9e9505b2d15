package io.queuebox.bootstrap.capture;

import io.queuebox.capture.DebeziumCapture;
import io.queuebox.capture.FileCaptureStateDirectory;
import io.queuebox.domain.CaptureSupervisor;
import io.queuebox.domain.DeliveryEngine;
import io.queuebox.domain.DeliverySettings;
import io.queuebox.ports.CaptureConnector;
import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureMode;
import io.queuebox.ports.CaptureSettings;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxStore;
import io.queuebox.postgres.PostgresOutbox;
import io.queuebox.postgres.PostgresOutboxSettings;
import io.queuebox.testkit.fixtures.OutboxFixtures;
import io.queuebox.testkit.publisher.RecordingPublisher;
import io.queuebox.testkit.services.TestServices;
import java.net.URI;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A database of its own with the outbox schema and a publication, and the real capture pieces around
 * it: the PostgreSQL capture state, lock and inspector, the file state directory, Debezium embedded,
 * and a delivery engine whose wake source is the capture supervisor. Closing drops the replication
 * slots first, because a slot nobody reads holds WAL forever.
 */
final class CaptureTestBed implements AutoCloseable {

    static final String SLOT_PREFIX = "qb_it_";
    static final Duration RECONCILIATION = Duration.ofMillis(700);

    final String database;
    final String host;
    final int port;
    final String user;
    final PGSimpleDataSource dataSource;
    final OutboxStore store;
    final String slot;
    private final String serverUrl;
    private final List<AutoCloseable> running = new ArrayList<>();
    final AtomicInteger connectorsCreated = new AtomicInteger();
    /** The Debezium factory of the supervisor created last, for its statistics. */
    volatile DebeziumCapture lastDebezium;

    CaptureTestBed() throws SQLException {
        serverUrl = TestServices.postgresUrl();
        URI uri = URI.create(serverUrl.substring("jdbc:".length()));
        host = uri.getHost();
        port = uri.getPort() < 0 ? 5432 : uri.getPort();
        user = "postgres";
        String suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        database = "qb_capture_it_" + suffix;
        slot = SLOT_PREFIX + suffix;
        try (Connection admin = DriverManager.getConnection(serverUrl); Statement st = admin.createStatement()) {
            try (var rs = st.executeQuery("SHOW wal_level")) {
                rs.next();
                if (!"logical".equals(rs.getString(1))) {
                    TestServices.missing(TestServices.POSTGRES, "capture tests need wal_level=logical");
                }
            }
            st.execute("CREATE DATABASE " + database);
        }
        dataSource = new PGSimpleDataSource();
        dataSource.setUrl("jdbc:postgresql://" + host + ":" + port + "/" + database);
        dataSource.setUser(user);
        PostgresOutbox.createSchema(dataSource, PostgresOutboxSettings.defaults());
        execute("CREATE PUBLICATION qb_pub FOR TABLE public.queuebox_outbox WITH (publish = 'insert')");
        store = PostgresOutbox.store(dataSource, PostgresOutboxSettings.defaults());
    }

    CaptureSettings settings(Path stateDirectory) {
        return settings(stateDirectory, UnaryOperator.identity());
    }

    CaptureSettings settings(Path stateDirectory, UnaryOperator<CaptureFingerprint> change) {
        CaptureFingerprint fingerprint = change.apply(
                new CaptureFingerprint(slot, "qb_pub", "public", "queuebox_outbox", host, database));
        return new CaptureSettings(true, CaptureMode.POSTGRES_LOGICAL, fingerprint, port, stateDirectory.toString(),
                RECONCILIATION);
    }

    /** A supervisor on the real pieces; connectors it creates are counted in {@link #connectorsCreated}. */
    CaptureSupervisor supervisor(CaptureSettings settings) {
        return supervisor(settings, "no_data");
    }

    CaptureSupervisor supervisor(CaptureSettings settings, String snapshotMode) {
        DebeziumCapture debezium = DebeziumCapture.builder().credentials(user, "")
                .pollInterval(Duration.ofMillis(10)).snapshotMode(snapshotMode).build();
        lastDebezium = debezium;
        CaptureConnector.Factory counting = (s, identity) -> {
            connectorsCreated.incrementAndGet();
            return debezium.create(s, identity);
        };
        CaptureSupervisor supervisor = CaptureSupervisor.builder()
                .settings(settings)
                .stateStore(PostgresOutbox.captureStateStore(dataSource, PostgresOutboxSettings.defaults()))
                .stateDirectory(new FileCaptureStateDirectory(Path.of(settings.stateDirectory())))
                .lock(PostgresOutbox.captureLock(dataSource))
                .inspector(PostgresOutbox.captureSourceInspector(dataSource))
                .connectors(counting)
                .build();
        running.add(supervisor);
        return supervisor;
    }

    /** A delivery engine woken by {@code supervisor}, with the reconciliation interval as its timer. */
    DeliveryEngine engine(CaptureSupervisor supervisor, RecordingPublisher publisher, Duration wakeInterval) {
        DeliveryEngine engine = DeliveryEngine.builder()
                .store(store)
                .publisher(publisher)
                .settings(DeliverySettings.builder().owner("capture-it").batchSize(100)
                        .wakeInterval(wakeInterval).leaseLength(Duration.ofSeconds(10)).build())
                .wakeSource(supervisor)
                .build();
        running.add(0, engine);
        engine.start();
        return engine;
    }

    List<OutboxEvent> write(int count) throws SQLException {
        List<OutboxEvent> events = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            events.add(OutboxFixtures.anEventFor("order-" + UUID.randomUUID()));
        }
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            PostgresOutbox.jdbcWriter(PostgresOutboxSettings.defaults()).enqueueAll(c, events);
            c.commit();
        }
        return events;
    }

    void execute(String sql) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute(sql);
        }
    }

    boolean slotExists() throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement();
             var rs = st.executeQuery("SELECT count(*) FROM pg_replication_slots WHERE slot_name = '" + slot + "'")) {
            rs.next();
            return rs.getInt(1) == 1;
        }
    }

    /** Drops the slot by hand, as an operator might; waits until its walsender is gone. */
    void dropSlot() throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = '" + slot
                    + "' AND active_pid IS NOT NULL");
            for (int i = 0; i < 50 && slotActive(st); i++) {
                pause(100);
            }
            st.execute("SELECT pg_drop_replication_slot('" + slot + "')");
        }
    }

    /** Kills the connector's replication connection, as a network failure or a database restart would. */
    boolean killConnector() throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement();
             var rs = st.executeQuery("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots"
                     + " WHERE slot_name = '" + slot + "' AND active_pid IS NOT NULL")) {
            return rs.next() && rs.getBoolean(1);
        }
    }

    /**
     * Terminates the backend holding the capture owner's session lock (the only advisory lock in this
     * database), as an administrator, a connection killer or a failover would; answers how many it ended.
     */
    int killLockSession() throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement();
             var rs = st.executeQuery("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_locks"
                     + " WHERE locktype = 'advisory' AND granted"
                     + " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    /** The JDBC URL of this database for the command line ({@code QUEUEBOX_DATABASE_URL}). */
    String url() {
        return "jdbc:postgresql://" + host + ":" + port + "/" + database + "?user=" + user;
    }

    private boolean slotActive(Statement st) throws SQLException {
        try (var rs = st.executeQuery("SELECT count(*) FROM pg_replication_slots WHERE slot_name = '" + slot
                + "' AND active")) {
            rs.next();
            return rs.getInt(1) > 0;
        }
    }

    CaptureIdentity identityIn(Path stateDirectory) {
        return new FileCaptureStateDirectory(stateDirectory).readIdentity().orElseThrow();
    }

    @Override
    public void close() throws Exception {
        for (AutoCloseable closeable : running) {
            try {
                closeable.close();
            } catch (Exception ignored) {
                // Best effort: the database is dropped below anyway.
            }
        }
        try (Connection admin = DriverManager.getConnection(serverUrl); Statement st = admin.createStatement()) {
            st.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots"
                    + " WHERE database = '" + database + "' AND active_pid IS NOT NULL");
            for (int i = 0; i < 50; i++) {
                try (var rs = st.executeQuery("SELECT count(*) FROM pg_replication_slots WHERE database = '"
                        + database + "' AND active")) {
                    rs.next();
                    if (rs.getInt(1) == 0) {
                        break;
                    }
                }
                pause(100);
            }
            st.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
                    + " WHERE database = '" + database + "'");
            st.execute("DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
        }
    }

    static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
