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
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Found by the review of 2cbdaca: the claims that end stalled claims judged another relay's session by their own
 * lease and their own current_user. A stalled claim is judged by its own lease (the advisory lock that marks it),
 * and relays that log in as one role and act as another can end each other's with the grants the docs name.
 */
class PostgresHeldClaimWatchdogReviewTest {

    private static final int ROWS = 20;
    private static final String APP = "watchdog-review-stalled";

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private TcpProxy proxy;
    private String suffix;

    @BeforeEach
    void schema() throws Exception {
        db = TestDatabase.withFreshSchema("watchdog");
        suffix = db.schema.substring(db.schema.length() - 8);
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
                + " AND (application_name LIKE 'watchdog-review%' OR usename = 'qbw_login_" + suffix + "')");
        db.endHeldClaims();
        db.close();
        db.execute("DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'qbw_login_" + suffix + "') THEN"
                + " DROP OWNED BY qbw_login_" + suffix + ", qbw_relay_" + suffix + " CASCADE; END IF; END $$");
        db.execute("DROP ROLE IF EXISTS qbw_login_" + suffix);
        db.execute("DROP ROLE IF EXISTS qbw_relay_" + suffix);
    }

    /**
     * Relay A runs with a 30 s lease (its broker is slow); its connection stalls mid-statement for 3 s, a tenth of
     * its lease. Relay B, with a 1 s lease, ends A's session after 1 s and takes A's rows: A's claim is lost well
     * within its own lease, and the rows are delivered twice.
     */
    @Test
    void aShortLeaseRelayEndsALongLeaseRelaysClaimWithinItsLease() throws Exception {
        OutboxStore a = PostgresOutbox.store(throughProxy(null, null), settings);
        OutboxStore b = PostgresOutbox.store(db.dataSource, settings);
        ClaimBatch batch = a.claim(request("a", Duration.ofSeconds(30)));
        assertThat(batch.deliveries()).hasSize(ROWS);

        proxy.stallClientAfterMessage('P');
        CompletableFuture<Integer> outcome = CompletableFuture.supplyAsync(() -> a.markSent(batch.lease(),
                batch.deliveries().stream().map(ClaimedDelivery::eventId).toList()));
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> proxy.stalling() && waitingMidStatement() == 1);

        int takenByB = 0;
        long until = System.nanoTime() + Duration.ofSeconds(3).toNanos();
        while (System.nanoTime() < until) {
            takenByB += b.claim(request("b", Duration.ofSeconds(1))).deliveries().size();
            TimeUnit.MILLISECONDS.sleep(200);
        }
        proxy.restore();
        int markedByA = outcome.get(30, TimeUnit.SECONDS);
        assertThat(markedByA + "/" + takenByB).as("rows A's outcome marked sent after a 3 s stall in its 30 s lease"
                + " / rows B (1 s lease) claimed meanwhile").isEqualTo(ROWS + "/0");
    }

    /**
     * The converse: relay A (1 s lease) stalls mid-statement; the only other relay, B, runs a 20 s lease. A's rows
     * stay held until B's lease, not A's, has passed.
     */
    @Test
    void aShortLeaseRelaysStalledRowsWaitForTheOtherRelaysLongerLease() throws Exception {
        OutboxStore a = PostgresOutbox.store(throughProxy(null, null), settings);
        OutboxStore b = PostgresOutbox.store(db.dataSource, settings);
        ClaimBatch batch = a.claim(request("a", Duration.ofSeconds(1)));
        assertThat(batch.deliveries()).hasSize(ROWS);

        proxy.stallClientAfterMessage('P');
        CompletableFuture.runAsync(() -> a.markSent(batch.lease(),
                batch.deliveries().stream().map(ClaimedDelivery::eventId).toList()));
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> proxy.stalling() && waitingMidStatement() == 1);
        long stalledAt = System.nanoTime();
        int claimed = 0;
        while (claimed == 0 && System.nanoTime() < stalledAt + Duration.ofSeconds(6).toNanos()) {
            claimed = b.claim(request("b", Duration.ofSeconds(20))).deliveries().size();
            TimeUnit.MILLISECONDS.sleep(200);
        }
        assertThat(claimed).as("rows B could claim within 6 s of the stall of A, whose lease is 1 s").isEqualTo(ROWS);
    }

    /**
     * Both relays log in as one role and act as another (ALTER ROLE ... SET role, or -c role=..., a common way to
     * have objects owned by a NOLOGIN role): pg_stat_activity.usename is the login role, current_user the other, so
     * the watchdog matches no session at all, and a stalled claim is never ended by any claim.
     */
    @Test
    void relaysThatActAsAnotherRoleWithoutTheGrantsNeitherFailTheirClaimsNorEndTheStalledOne() throws Exception {
        assertThat(claimedAfterAStallUnderSetRole(false)).as("rows B claimed; its claims did not fail").isZero();
    }

    @Test
    void relaysThatActAsAnotherRoleEndAStalledClaimWithTheGrants() throws Exception {
        assertThat(claimedAfterAStallUnderSetRole(true))
                .as("rows B could claim within 6 s of the stall (lease 2 s, both relays SET ROLE, the acting role"
                        + " granted pg_read_all_stats and pg_signal_backend)").isEqualTo(ROWS);
    }

    private int claimedAfterAStallUnderSetRole(boolean grants) throws Exception {
        String relayRole = "qbw_relay_" + suffix;
        String login = "qbw_login_" + suffix;
        db.execute("CREATE ROLE " + relayRole + " NOLOGIN");
        db.execute("CREATE ROLE " + login + " LOGIN IN ROLE " + relayRole);
        db.execute("GRANT USAGE ON SCHEMA \"" + db.schema + "\" TO " + relayRole);
        db.execute("GRANT ALL ON ALL TABLES IN SCHEMA \"" + db.schema + "\" TO " + relayRole);
        db.execute("GRANT ALL ON ALL SEQUENCES IN SCHEMA \"" + db.schema + "\" TO " + relayRole);
        if (grants) {
            db.execute("GRANT pg_read_all_stats, pg_signal_backend TO " + relayRole);
        }
        Duration lease = Duration.ofSeconds(2);

        OutboxStore a = PostgresOutbox.store(throughProxy(login, relayRole), settings);
        PGSimpleDataSource direct = new PGSimpleDataSource();
        direct.setURL(TestServices.postgresUrl());
        direct.setUser(login);
        direct.setOptions("-c role=" + relayRole);
        direct.setApplicationName("watchdog-review-b");
        OutboxStore b = PostgresOutbox.store(direct, settings);
        ClaimBatch batch = a.claim(request("a", lease));
        assertThat(batch.deliveries()).hasSize(ROWS);

        proxy.stallClientAfterMessage('P');
        CompletableFuture.runAsync(() -> a.markSent(batch.lease(),
                batch.deliveries().stream().map(ClaimedDelivery::eventId).toList()));
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> proxy.stalling() && waitingMidStatement() == 1);
        long stalledAt = System.nanoTime();
        int claimed = 0;
        while (claimed == 0 && System.nanoTime() < stalledAt + Duration.ofSeconds(6).toNanos()) {
            claimed = b.claim(request("b", lease)).deliveries().size();
            TimeUnit.MILLISECONDS.sleep(200);
        }
        return claimed;
    }

    private long waitingMidStatement() throws Exception {
        try (Connection connection = db.dataSource.getConnection(); Statement statement = connection.createStatement();
             ResultSet rs = statement.executeQuery("SELECT count(*) FROM pg_stat_activity"
                     + " WHERE application_name = '" + APP + "' AND state = 'active' AND wait_event = 'ClientRead'")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private PGSimpleDataSource throughProxy(String user, String role) {
        URI server = URI.create(TestServices.postgresUrl().substring("jdbc:".length()));
        PGSimpleDataSource dataSource = new PGSimpleDataSource();
        dataSource.setURL(TestServices.postgresUrl().replace(server.getHost() + ":" + server.getPort(),
                "127.0.0.1:" + proxy.port()));
        if (user != null) {
            dataSource.setUser(user);
            dataSource.setOptions("-c role=" + role);
        }
        dataSource.setApplicationName(APP);
        return dataSource;
    }

    private static ClaimRequest request(String owner, Duration lease) {
        return new ClaimRequest(owner, ROWS, lease, Ordering.NONE, ParkingPolicy.HOLD_AGGREGATE);
    }
}
