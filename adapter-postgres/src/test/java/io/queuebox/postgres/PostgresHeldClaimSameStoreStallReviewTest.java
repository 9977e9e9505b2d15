package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.testkit.faults.TcpProxy;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Adversarial review of aa618e0 and e840078 with a stall mid-statement inside one store: one claim's connection goes
 * through a proxy that stalls its mark-sent after the Parse (the worker's thread then holds that claim's lock for as
 * long as the stall lasts), the store's other claims go direct. Before aa618e0 every other claim of the store waited
 * on the stalled claim's monitor; now they must go on, end the stalled session after its lease (ENDS_STALLED), claim
 * its rows once, and the stalled mark-sent must answer 0 when the stall ends (fencing), with its connection closed.
 * Also e840078 with a database whose name needs quoting (mixed case, a space).
 */
class PostgresHeldClaimSameStoreStallReviewTest {

    private static final int ROWS = 12;
    private static final Duration LEASE = Duration.ofSeconds(2);
    private static final String STALLED = "same-store-stalled";

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private TcpProxy proxy;

    /** Connections through the proxy while {@link #viaProxy} is set, direct otherwise. */
    private static final class Routing extends PGSimpleDataSource {
        final AtomicBoolean viaProxy = new AtomicBoolean();
        final PGSimpleDataSource proxied;

        Routing(String url, PGSimpleDataSource proxied) {
            setURL(url);
            setApplicationName("same-store-direct");
            this.proxied = proxied;
        }

        @Override
        public Connection getConnection() throws SQLException {
            return viaProxy.get() ? proxied.getConnection() : super.getConnection();
        }
    }

    @BeforeEach
    void schema() throws Exception {
        db = TestDatabase.withFreshSchema("samestall");
        settings = db.settings().holdRowLocks(true).build();
        proxy = ProxiedRelay.proxy();
    }

    @AfterEach
    void drop() {
        proxy.close();
        db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid()"
                + " AND application_name IN ('" + STALLED + "', 'same-store-direct')");
        db.endHeldClaims();
        db.close();
    }

    @Test
    void anotherClaimOfTheSameStoreEndsAStalledOutcomeAndTheLateOutcomeIsFenced() throws Exception {
        runIn(null);
    }

    @Test
    void theSameInADatabaseWhoseNameNeedsQuoting() throws Exception {
        String name = "QB Mixed-" + db.schema.substring(db.schema.length() - 8);
        db.execute("CREATE DATABASE \"" + name + "\"");
        try {
            runIn(name);
        } finally {
            proxy.restore();
            db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + name + "'");
            db.execute("DROP DATABASE IF EXISTS \"" + name + "\"");
        }
    }

    private void runIn(String database) throws Exception {
        PGSimpleDataSource proxied = ProxiedRelay.through(proxy, STALLED);
        Routing routing = new Routing(((PGSimpleDataSource) db.dataSource).getURL(), proxied);
        if (database != null) {
            proxied.setDatabaseName(database);
            routing.setDatabaseName(database);
        }
        PostgresOutbox.createSchema(routing, settings);
        try (Connection c = routing.getConnection(); Statement s = c.createStatement()) {
            if (database != null) {
                assertThat(c.getCatalog()).isEqualTo(database);
            }
            s.execute("INSERT INTO " + settings.qualifiedTable() + " (event_id, aggregate_type, aggregate_id,"
                    + " event_type, payload) SELECT gen_random_uuid(), 'order', 'a' || (g % 3), 'OrderPlaced', '\\x00'"
                    + " FROM generate_series(1, " + ROWS + ") g");
        }
        OutboxStore store = PostgresOutbox.store(routing, settings);
        ClaimRequest request = new ClaimRequest("relay", ROWS, LEASE, Ordering.PER_AGGREGATE,
                ParkingPolicy.HOLD_AGGREGATE);

        routing.viaProxy.set(true);
        ClaimBatch stalledBatch = store.claim(request);
        routing.viaProxy.set(false);
        assertThat(stalledBatch.deliveries()).hasSize(ROWS);
        Set<UUID> ids = new HashSet<>(stalledBatch.deliveries().stream().map(ClaimedDelivery::eventId).toList());

        proxy.stallClientAfterMessage('P');
        CompletableFuture<Integer> lateOutcome = CompletableFuture.supplyAsync(() -> store.markSent(
                stalledBatch.lease(), stalledBatch.deliveries().stream().map(ClaimedDelivery::eventId).toList()));
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> proxy.stalling() && waitingMidStatement() == 1);
        long stalledAt = System.nanoTime();

        int sent = 0;
        long slowestClaim = 0;
        Set<UUID> claimedAgain = new HashSet<>();
        while (sent < ROWS && System.nanoTime() < stalledAt + TimeUnit.SECONDS.toNanos(8)) {
            long t0 = System.nanoTime();
            CompletableFuture<ClaimBatch> claim = CompletableFuture.supplyAsync(() -> store.claim(request));
            ClaimBatch batch = claim.completeOnTimeout(null, 3, TimeUnit.SECONDS).get();
            assertThat(batch).as("a claim of the same store while its other claim's outcome is stalled").isNotNull();
            slowestClaim = Math.max(slowestClaim, System.nanoTime() - t0);
            if (batch.deliveries().isEmpty()) {
                TimeUnit.MILLISECONDS.sleep(200);
                continue;
            }
            batch.deliveries().forEach(d -> assertThat(claimedAgain.add(d.eventId()))
                    .as("a row claimed twice after the stall").isTrue());
            sent += store.markSent(batch.lease(), batch.deliveries().stream().map(ClaimedDelivery::eventId).toList());
        }
        double freedAfter = (System.nanoTime() - stalledAt) / 1e9;
        Optional<Duration> due = store.timeUntilNextDue();
        System.out.printf("db %s: rows sent by the other claims %d after %.2f s (lease %s), slowest claim %d ms,"
                + " timeUntilNextDue %s%n", database, sent, freedAfter, LEASE, slowestClaim / 1_000_000, due);
        assertThat(claimedAgain).isEqualTo(ids);
        assertThat(sent).as("rows freed from the stalled claim and marked sent by the store's other claims")
                .isEqualTo(ROWS);
        assertThat(waitingMidStatement()).as("the stalled session was ended").isZero();

        proxy.restore();
        assertThat(lateOutcome.get(30, TimeUnit.SECONDS)).as("the late mark-sent of the ended claim").isZero();
        // The ended claim's connection is closed and the store forgets it.
        assertThat(store.timeUntilNextDue()).isEmpty();
        try (Connection c = routing.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_stat_activity WHERE application_name = '"
                     + STALLED + "'")) {
            rs.next();
            assertThat(rs.getInt(1)).as("sessions of the stalled claim left").isZero();
        }
    }

    private long waitingMidStatement() throws Exception {
        try (Connection connection = db.dataSource.getConnection(); Statement statement = connection.createStatement();
             ResultSet rs = statement.executeQuery("SELECT count(*) FROM pg_stat_activity"
                     + " WHERE application_name = '" + STALLED + "' AND state = 'active' AND wait_event = 'ClientRead'")) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
