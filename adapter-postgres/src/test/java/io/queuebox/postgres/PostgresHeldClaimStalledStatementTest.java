package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.testkit.faults.TcpProxy;
import io.queuebox.testkit.services.TestServices;
import java.net.URI;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A relay whose connection lost the rest of a statement of its held claim: PostgreSQL read the statement's Parse,
 * and the Bind, Execute and Sync after it never came (a network that fails mid-statement; the relay's kernel, or a
 * middlebox, still acknowledges). The session is then active, not idle, so its idle timeout never runs, and nothing
 * is unacknowledged, so no TCP timeout does either: the rows must still come free within about the lease, as they
 * would with a lease written on them.
 */
class PostgresHeldClaimStalledStatementTest {

    private static final int ROWS = 20;
    private static final Duration LEASE = Duration.ofSeconds(2);
    /** The lease, then the next claim of the other relay (every 200 ms here), with room for a loaded machine. */
    private static final Duration FREED_WITHIN = Duration.ofSeconds(6);

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private TcpProxy proxy;

    @BeforeEach
    void schema() throws Exception {
        db = TestDatabase.withFreshSchema("stalled");
        settings = db.settings().holdRowLocks(true).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        db.execute("INSERT INTO " + settings.qualifiedTable() + " (event_id, aggregate_type, aggregate_id, event_type,"
                + " payload) SELECT gen_random_uuid(), 'order', 'a' || (g % 5), 'OrderPlaced', '\\x00'"
                + " FROM generate_series(1, " + ROWS + ") g");
        URI server = URI.create(TestServices.postgresUrl().substring("jdbc:".length()));
        proxy = new TcpProxy(server.getHost(), server.getPort());
    }

    @AfterEach
    void drop() {
        proxy.close();
        db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid()"
                + " AND application_name = 'stalled-relay'");
        db.close();
    }

    @ParameterizedTest
    @EnumSource(Ordering.class)
    void theRowsOfARelayStalledMidStatementAreClaimableAfterAboutTheLease(Ordering ordering) throws Exception {
        OutboxStore stalled = PostgresOutbox.store(throughProxy(), settings);
        OutboxStore other = PostgresOutbox.store(db.dataSource, settings);
        ClaimBatch batch = stalled.claim(request("stalled", ordering));
        assertThat(batch.deliveries()).hasSize(ROWS);

        // The outcome's Parse reaches PostgreSQL; the rest of the statement does not.
        proxy.stallClientAfterMessage('P');
        CompletableFuture<Integer> outcome = CompletableFuture.supplyAsync(() -> stalled.markSent(batch.lease(),
                batch.deliveries().stream().map(ClaimedDelivery::eventId).toList()));
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> proxy.stalling() && waitingMidStatement() == 1);
        long stalledAt = System.nanoTime();
        assertThat(other.claim(request("other", ordering)).deliveries())
                .as("rows taken while the stalled claim holds them").isEmpty();

        int claimed = 0;
        long deadline = stalledAt + FREED_WITHIN.toNanos();
        while (claimed == 0 && System.nanoTime() < deadline) {
            claimed = other.claim(request("other", ordering)).deliveries().size();
            if (claimed == 0) {
                TimeUnit.MILLISECONDS.sleep(200);
            }
        }
        assertThat(claimed).as("rows another relay could claim within %s of the stall (lease %s)", FREED_WITHIN, LEASE)
                .isEqualTo(batch.deliveries().size());
        proxy.restore();
        assertThat(outcome.get(30, TimeUnit.SECONDS)).as("rows the stalled relay's late outcome marked sent").isZero();
    }

    @org.junit.jupiter.api.Test
    void aWriterStalledMidStatementIsLeftAlone() throws Exception {
        OutboxStore relay = PostgresOutbox.store(db.dataSource, settings);
        relay.claim(request("relay", Ordering.NONE)); // takes the rows already there
        try (Connection writer = throughProxy().getConnection()) {
            writer.setAutoCommit(false);
            try (Statement statement = writer.createStatement()) {
                statement.execute("INSERT INTO " + settings.qualifiedTable() + " (event_id, aggregate_type,"
                        + " aggregate_id, event_type, payload) VALUES (gen_random_uuid(), 'order', 'w', 'OrderPlaced', '\\x00')");
            }
            proxy.stallClientAfterMessage('P');
            CompletableFuture<Boolean> next = CompletableFuture.supplyAsync(() -> {
                try (Statement statement = writer.createStatement()) {
                    return statement.execute("SELECT 1");
                } catch (java.sql.SQLException e) {
                    throw new IllegalStateException(e);
                }
            });
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> proxy.stalling() && waitingMidStatement() == 1);
            long until = System.nanoTime() + LEASE.multipliedBy(2).toNanos();
            while (System.nanoTime() < until) {
                relay.claim(request("relay", Ordering.PER_AGGREGATE));
                relay.claim(request("relay", Ordering.NONE));
                TimeUnit.MILLISECONDS.sleep(200);
            }
            assertThat(waitingMidStatement()).as("the writer's session, after claims for twice the lease").isEqualTo(1);
            proxy.restore();
            assertThat(next.get(10, TimeUnit.SECONDS)).isTrue();
            writer.commit();
        }
    }

    /**
     * What lets a relay gone mid-statement be noticed without another relay: TCP keepalives from half the lease on,
     * answered or not within tcp_user_timeout (the lease), and the advisory lock that tells the other claims the
     * lease. All local to the claim's transaction.
     */
    @org.junit.jupiter.api.Test
    void aHeldClaimsTransactionSetsKeepalivesAndIsMarkedWithItsLease() throws Exception {
        OutboxSql sql = new OutboxSql(settings);
        try (Connection connection = db.dataSource.getConnection(); Statement statement = connection.createStatement()) {
            String before = show(statement, "tcp_keepalives_idle");
            connection.setAutoCommit(false);
            try (java.sql.PreparedStatement hold = connection.prepareStatement(sql.holdFor.replace(":millis", "?"))) {
                for (int i = 1; i <= hold.getParameterMetaData().getParameterCount(); i++) {
                    hold.setString(i, "8000");
                }
                hold.executeQuery().close();
            }
            assertThat(show(statement, "tcp_keepalives_idle") + " " + show(statement, "tcp_keepalives_interval") + " "
                    + show(statement, "tcp_user_timeout")).isEqualTo("4 1 8000");
            try (ResultSet marker = statement.executeQuery("SELECT objid::text FROM pg_locks WHERE pid = pg_backend_pid()"
                    + " AND locktype = 'advisory' AND classid = " + OutboxSql.HELD_CLAIM_LOCK_KEY + " AND objsubid = 2")) {
                assertThat(marker.next() ? marker.getString(1) : null).as("the lease the marker carries").isEqualTo("8000");
            }
            connection.commit();
            assertThat(show(statement, "tcp_keepalives_idle")).as("after the claim's transaction").isEqualTo(before);
        }
    }

    private static String show(Statement statement, String setting) throws java.sql.SQLException {
        try (ResultSet rs = statement.executeQuery("SHOW " + setting)) {
            rs.next();
            return rs.getString(1);
        }
    }

    /** Sessions of the stalled relay that are in the middle of a statement, waiting to read the rest of it. */
    private long waitingMidStatement() throws Exception {
        try (Connection connection = db.dataSource.getConnection(); Statement statement = connection.createStatement();
             ResultSet rs = statement.executeQuery("SELECT count(*) FROM pg_stat_activity"
                     + " WHERE application_name = 'stalled-relay' AND state = 'active' AND wait_event = 'ClientRead'")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private PGSimpleDataSource throughProxy() {
        URI server = URI.create(TestServices.postgresUrl().substring("jdbc:".length()));
        PGSimpleDataSource dataSource = new PGSimpleDataSource();
        dataSource.setURL(TestServices.postgresUrl().replace(server.getHost() + ":" + server.getPort(),
                "127.0.0.1:" + proxy.port()));
        dataSource.setApplicationName("stalled-relay");
        return dataSource;
    }

    private static ClaimRequest request(String owner, Ordering ordering) {
        return new ClaimRequest(owner, ROWS, LEASE, ordering, ParkingPolicy.HOLD_AGGREGATE);
    }
}
