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
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A relay whose connection lost the rest of a statement of its held claim: PostgreSQL read the statement's Parse,
 * and the Bind, Execute and Sync after it never came (a network that fails mid-statement; the relay's kernel, or a
 * middlebox, still acknowledges). The session is then active, not idle, so its idle timeout never runs, and nothing
 * is unacknowledged, so no TCP timeout does either: the rows must still come free within about the lease, as they
 * would with a lease written on them. The other claims end such a session, judging it by its own lease (the review
 * of 2cbdaca found them judging it by theirs, and by their own role alone).
 */
class PostgresHeldClaimStalledStatementTest {

    private static final int ROWS = 20;
    private static final Duration LEASE = Duration.ofSeconds(2);
    /** The lease, then the next claim of the other relay (every 200 ms here), with room for a loaded machine. */
    private static final Duration FREED_WITHIN = Duration.ofSeconds(6);
    private static final String STALLED = "stalled-relay";

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private TcpProxy proxy;
    private String loginRole;
    private String actingRole;

    @BeforeEach
    void schema() throws Exception {
        db = TestDatabase.withFreshSchema("stalled");
        settings = db.settings().holdRowLocks(true).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        db.execute("INSERT INTO " + settings.qualifiedTable() + " (event_id, aggregate_type, aggregate_id, event_type,"
                + " payload) SELECT gen_random_uuid(), 'order', 'a' || (g % 5), 'OrderPlaced', '\\x00'"
                + " FROM generate_series(1, " + ROWS + ") g");
        proxy = ProxiedRelay.proxy();
        String suffix = db.schema.substring(db.schema.length() - 8);
        loginRole = "qb_login_" + suffix;
        actingRole = "qb_relay_" + suffix;
    }

    @AfterEach
    void drop() {
        proxy.close();
        db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid()"
                + " AND (application_name IN ('" + STALLED + "', 'other-relay') OR usename = '" + loginRole + "')");
        db.endHeldClaims();
        db.close();
        db.execute("DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '" + loginRole + "') THEN"
                + " DROP OWNED BY " + loginRole + ", " + actingRole + " CASCADE; END IF; END $$");
        db.execute("DROP ROLE IF EXISTS " + loginRole);
        db.execute("DROP ROLE IF EXISTS " + actingRole);
    }

    @ParameterizedTest
    @EnumSource(Ordering.class)
    void theRowsOfARelayStalledMidStatementAreClaimableAfterAboutTheLease(Ordering ordering) throws Exception {
        OutboxStore stalled = PostgresOutbox.store(ProxiedRelay.through(proxy, STALLED), settings);
        OutboxStore other = PostgresOutbox.store(db.dataSource, settings);
        ClaimBatch batch = claimAll(stalled, request("stalled", ordering, LEASE));

        CompletableFuture<Integer> outcome = stallOutcome(stalled, batch);
        long stalledAt = System.nanoTime();
        assertThat(other.claim(request("other", ordering, LEASE)).deliveries())
                .as("rows taken while the stalled claim holds them").isEmpty();

        // The claim that ends the stalled session may find part of its rows still held while it goes (CI saw 9 of
        // 20 once, per-aggregate): what must hold is that every row is claimable within about the lease, once each.
        assertThat(sentWithin(other, request("other", ordering, LEASE), stalledAt, FREED_WITHIN))
                .as("rows another relay could claim (and mark sent) within %s of the stall (lease %s)", FREED_WITHIN, LEASE)
                .isEqualTo(ROWS);
        proxy.restore();
        assertThat(outcome.get(30, TimeUnit.SECONDS)).as("rows the stalled relay's late outcome marked sent").isZero();
    }

    /**
     * Relay A runs with a 30 s lease (its broker is slow); its connection stalls mid-statement for 3 s, a tenth of
     * its lease. Relay B, with a 1 s lease, must leave A's claim alone: judged by B's lease, A lost its rows to B.
     */
    @Test
    void aShortLeaseRelayLeavesALongLeaseRelaysStalledClaimAloneWithinItsLease() throws Exception {
        OutboxStore a = PostgresOutbox.store(ProxiedRelay.through(proxy, STALLED), settings);
        OutboxStore b = PostgresOutbox.store(db.dataSource, settings);
        ClaimBatch batch = claimAll(a, request("a", Ordering.NONE, Duration.ofSeconds(30)));

        CompletableFuture<Integer> outcome = stallOutcome(a, batch);
        int takenByB = 0;
        long until = System.nanoTime() + Duration.ofSeconds(3).toNanos();
        while (System.nanoTime() < until) {
            takenByB += b.claim(request("b", Ordering.NONE, Duration.ofSeconds(1))).deliveries().size();
            TimeUnit.MILLISECONDS.sleep(200);
        }
        proxy.restore();
        int markedByA = outcome.get(30, TimeUnit.SECONDS);
        assertThat(markedByA + "/" + takenByB).as("rows A's outcome marked sent after a 3 s stall in its 30 s lease"
                + " / rows B (1 s lease) claimed meanwhile").isEqualTo(ROWS + "/0");
    }

    /** The converse: relay A (1 s lease) stalls; the only other relay, B, runs a 20 s lease. A's lease counts. */
    @Test
    void aStalledClaimIsEndedAfterItsOwnLeaseNotTheOtherRelays() throws Exception {
        OutboxStore a = PostgresOutbox.store(ProxiedRelay.through(proxy, STALLED), settings);
        OutboxStore b = PostgresOutbox.store(db.dataSource, settings);
        ClaimBatch batch = claimAll(a, request("a", Ordering.NONE, Duration.ofSeconds(1)));

        stallOutcome(a, batch);
        assertThat(claimedWithin(b, request("b", Ordering.NONE, Duration.ofSeconds(20)), System.nanoTime(), FREED_WITHIN))
                .as("rows B (20 s lease) could claim within %s of the stall of A, whose lease is 1 s", FREED_WITHIN)
                .isEqualTo(ROWS);
    }

    /**
     * Relays that log in as one role and act as another (ALTER ROLE ... SET role, or -c role=): pg_stat_activity
     * names the login role, which the acting role has no privileges of. Without further grants a claim can neither
     * see nor end the stalled session, and must not fail trying.
     */
    @Test
    void relaysThatActAsAnotherRoleWithoutTheGrantsNeitherFailTheirClaimsNorEndTheStalledOne() throws Exception {
        assertThat(claimedAfterAStallUnderSetRole(false)).as("rows B claimed; its claims did not fail").isZero();
    }

    @Test
    void relaysThatActAsAnotherRoleEndAStalledClaimWithTheGrants() throws Exception {
        assertThat(claimedAfterAStallUnderSetRole(true))
                .as("rows B could claim within %s of the stall (lease 2 s, both relays SET ROLE, the acting role"
                        + " granted pg_read_all_stats and pg_signal_backend)", FREED_WITHIN).isEqualTo(ROWS);
    }

    /**
     * The marker a held claim's transaction carries is an advisory lock, and advisory locks belong to their database:
     * in another database the same keys may be anybody's (an application that uses QueueBox nowhere). A relay's claims
     * end stalled sessions of their own database only; before the fix they ended this one, in a database next door,
     * after its "lease" of 1 s.
     */
    @Test
    void aSessionStalledInAnotherDatabaseIsLeftAlone() throws Exception {
        String other = "qb_other_" + db.schema.substring(db.schema.length() - 8);
        db.execute("CREATE DATABASE " + other);
        try {
            OutboxStore relay = PostgresOutbox.store(db.dataSource, settings);
            relay.claim(request("relay", Ordering.NONE, LEASE)); // takes the rows already there
            PGSimpleDataSource next = ProxiedRelay.through(proxy, STALLED);
            next.setDatabaseName(other);
            try (Connection stranger = next.getConnection()) {
                assertThat(stranger.getCatalog()).isEqualTo(other);
                stranger.setAutoCommit(false);
                try (Statement statement = stranger.createStatement()) {
                    statement.execute("SELECT pg_advisory_xact_lock_shared(" + OutboxSql.HELD_CLAIM_LOCK_KEY + ", 1000)");
                    statement.execute("SELECT txid_current()");
                }
                proxy.stallClientAfterMessage('P');
                CompletableFuture<Boolean> stalled = CompletableFuture.supplyAsync(() -> {
                    try (Statement statement = stranger.createStatement()) {
                        return statement.execute("SELECT 1");
                    } catch (SQLException e) {
                        throw new IllegalStateException(e);
                    }
                });
                Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> proxy.stalling() && waitingMidStatement() == 1);
                long until = System.nanoTime() + Duration.ofSeconds(3).toNanos();
                while (System.nanoTime() < until) {
                    relay.claim(request("relay", Ordering.PER_AGGREGATE, LEASE));
                    relay.claim(request("relay", Ordering.NONE, LEASE));
                    TimeUnit.MILLISECONDS.sleep(200);
                }
                assertThat(waitingMidStatement()).as("the session in %s, after 3 s of claims in %s", other, "test")
                        .isEqualTo(1);
                proxy.restore();
                assertThat(stalled.get(10, TimeUnit.SECONDS)).isTrue();
                stranger.rollback();
            }
        } finally {
            proxy.restore();
            db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + other + "'");
            db.execute("DROP DATABASE IF EXISTS " + other);
        }
    }

    @Test
    void aWriterStalledMidStatementIsLeftAlone() throws Exception {
        OutboxStore relay = PostgresOutbox.store(db.dataSource, settings);
        relay.claim(request("relay", Ordering.NONE, LEASE)); // takes the rows already there
        try (Connection writer = ProxiedRelay.through(proxy, STALLED).getConnection()) {
            writer.setAutoCommit(false);
            try (Statement statement = writer.createStatement()) {
                statement.execute("INSERT INTO " + settings.qualifiedTable() + " (event_id, aggregate_type,"
                        + " aggregate_id, event_type, payload) VALUES (gen_random_uuid(), 'order', 'w', 'OrderPlaced', '\\x00')");
            }
            proxy.stallClientAfterMessage('P');
            CompletableFuture<Boolean> next = CompletableFuture.supplyAsync(() -> {
                try (Statement statement = writer.createStatement()) {
                    return statement.execute("SELECT 1");
                } catch (SQLException e) {
                    throw new IllegalStateException(e);
                }
            });
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> proxy.stalling() && waitingMidStatement() == 1);
            long until = System.nanoTime() + LEASE.multipliedBy(2).toNanos();
            while (System.nanoTime() < until) {
                relay.claim(request("relay", Ordering.PER_AGGREGATE, LEASE));
                relay.claim(request("relay", Ordering.NONE, LEASE));
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
    @Test
    void aHeldClaimsTransactionSetsKeepalivesAndIsMarkedWithItsLease() throws Exception {
        OutboxSql sql = new OutboxSql(settings);
        try (Connection connection = db.dataSource.getConnection(); Statement statement = connection.createStatement()) {
            String before = show(statement, "tcp_keepalives_idle");
            connection.setAutoCommit(false);
            try (PreparedStatement hold = connection.prepareStatement(sql.holdFor.replace(":millis", "?"))) {
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

    private int claimedAfterAStallUnderSetRole(boolean grants) throws Exception {
        db.execute("CREATE ROLE " + actingRole + " NOLOGIN");
        db.execute("CREATE ROLE " + loginRole + " LOGIN IN ROLE " + actingRole);
        db.execute("GRANT USAGE ON SCHEMA \"" + db.schema + "\" TO " + actingRole);
        db.execute("GRANT ALL ON ALL TABLES IN SCHEMA \"" + db.schema + "\" TO " + actingRole);
        db.execute("GRANT ALL ON ALL SEQUENCES IN SCHEMA \"" + db.schema + "\" TO " + actingRole);
        if (grants) {
            db.execute("GRANT pg_read_all_stats, pg_signal_backend TO " + actingRole);
        }
        PGSimpleDataSource stalledSource = ProxiedRelay.through(proxy, STALLED);
        PGSimpleDataSource otherSource = new PGSimpleDataSource();
        otherSource.setURL(TestServices.postgresUrl());
        otherSource.setApplicationName("other-relay");
        for (PGSimpleDataSource source : new PGSimpleDataSource[] {stalledSource, otherSource}) {
            source.setUser(loginRole);
            source.setOptions("-c role=" + actingRole);
        }
        OutboxStore a = PostgresOutbox.store(stalledSource, settings);
        OutboxStore b = PostgresOutbox.store(otherSource, settings);
        ClaimBatch batch = claimAll(a, request("a", Ordering.NONE, LEASE));

        stallOutcome(a, batch);
        return claimedWithin(b, request("b", Ordering.NONE, LEASE), System.nanoTime(), FREED_WITHIN);
    }

    /** A claim of every row, as each test's stalling relay starts with. */
    private static ClaimBatch claimAll(OutboxStore store, ClaimRequest request) {
        ClaimBatch batch = store.claim(request);
        assertThat(batch.deliveries()).as("rows of the first claim").hasSize(ROWS);
        return batch;
    }

    /** Marks the batch sent through the proxy, which passes the statement's Parse and holds the rest. */
    private CompletableFuture<Integer> stallOutcome(OutboxStore store, ClaimBatch batch) {
        proxy.stallClientAfterMessage('P');
        CompletableFuture<Integer> outcome = CompletableFuture.supplyAsync(() -> store.markSent(batch.lease(),
                batch.deliveries().stream().map(ClaimedDelivery::eventId).toList()));
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> proxy.stalling() && waitingMidStatement() == 1);
        return outcome;
    }

    /**
     * Claims every 200 ms until {@link #ROWS} rows were claimed or {@code within} has passed since {@code fromNanos};
     * the rows claimed in all. A claim that ends the stalled session can find some of its rows still locked while that
     * session's transaction rolls back (CI of 2026-12-05: 9 of 20), and the next claim takes the rest; what counts is
     * that every row is claimable within the bound. Distinct rows are counted: one whose lease lapsed is not counted
     * again.
     */
    private static int claimedWithin(OutboxStore store, ClaimRequest request, long fromNanos, Duration within)
            throws InterruptedException {
        Set<UUID> claimed = new HashSet<>();
        while (claimed.size() < ROWS && System.nanoTime() < fromNanos + within.toNanos()) {
            store.claim(request).deliveries().forEach(delivery -> claimed.add(delivery.eventId()));
            if (claimed.size() < ROWS) {
                TimeUnit.MILLISECONDS.sleep(200);
            }
        }
        return claimed.size();
    }

    /**
     * Claims every 200 ms, marking what each claim returns sent, until {@link #ROWS} rows were sent or {@code within}
     * has passed since {@code fromNanos}; the number sent (a row sent twice would count twice: markSent answers for
     * each row it marked).
     */
    private static int sentWithin(OutboxStore store, ClaimRequest request, long fromNanos, Duration within)
            throws InterruptedException {
        int sent = 0;
        while (sent < ROWS && System.nanoTime() < fromNanos + within.toNanos()) {
            ClaimBatch batch = store.claim(request);
            if (batch.deliveries().isEmpty()) {
                TimeUnit.MILLISECONDS.sleep(200);
                continue;
            }
            sent += store.markSent(batch.lease(), batch.deliveries().stream().map(ClaimedDelivery::eventId).toList());
        }
        return sent;
    }

    /** Sessions of the stalled relay that are in the middle of a statement, waiting to read the rest of it. */
    private long waitingMidStatement() throws Exception {
        try (Connection connection = db.dataSource.getConnection(); Statement statement = connection.createStatement();
             ResultSet rs = statement.executeQuery("SELECT count(*) FROM pg_stat_activity"
                     + " WHERE application_name = '" + STALLED + "' AND state = 'active' AND wait_event = 'ClientRead'")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static String show(Statement statement, String setting) throws SQLException {
        try (ResultSet rs = statement.executeQuery("SHOW " + setting)) {
            rs.next();
            return rs.getString(1);
        }
    }

    private static ClaimRequest request(String owner, Ordering ordering, Duration lease) {
        return new ClaimRequest(owner, ROWS, lease, ordering, ParkingPolicy.HOLD_AGGREGATE);
    }
}
