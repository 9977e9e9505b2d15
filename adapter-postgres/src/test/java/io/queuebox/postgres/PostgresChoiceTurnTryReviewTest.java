package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.queuebox.jdbc.testing.ReusingDataSource;
import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.testkit.services.TestServices;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.StatementContext;
import org.jdbi.v3.core.statement.StatementCustomizer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Review of the turn taken at once (OutboxSql tryChoiceTurn: pg_try_advisory_lock outside any savepoint, before the
 * savepoint path). Probes of the ways a session advisory lock could be left held (or counted twice) on a pooled
 * connection: a try in every round of a claim (a chosen row lost to another claimer, a row parked at claim between
 * the rounds), a try whose statement fails after the server granted the lock, and relays with pooled connections and
 * short leases (bounds of 20 ms, so claims also wait out the turn, and are granted it as they give up) draining one
 * table together. After each, no session may hold the turn once the claims' connections are back in their pools,
 * and no claim may hand out a row while an earlier sibling is unsent outside its batch.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class PostgresChoiceTurnTryReviewTest {

    private static final String TRY = "pg_try_advisory_lock(" + OutboxSql.CHOICE_TURN_LOCK_KEY;

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private TurnChecks checks;
    private final List<AutoCloseable> closeAtEnd = new ArrayList<>();

    @BeforeEach
    void schema() {
        db = TestDatabase.withFreshSchema("turntry");
        settings = db.settings().holdRowLocks(true).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        checks = new TurnChecks(db, settings);
    }

    @AfterEach
    void drop() throws Exception {
        for (AutoCloseable c : closeAtEnd) {
            c.close();
        }
        db.endHeldClaims();
        db.close();
    }

    private static ClaimRequest ordered(int maxRows, Duration lease) {
        return new ClaimRequest("relay", maxRows, lease, Ordering.PER_AGGREGATE, ParkingPolicy.HOLD_AGGREGATE);
    }

    private static List<UUID> ids(ClaimBatch batch) {
        return batch.deliveries().stream().map(ClaimedDelivery::eventId).toList();
    }

    /** Full claims of {@code maxRows} rows, so that the store's next claim takes the turn among processes. */
    private void fullClaim(OutboxStore store, int maxRows) {
        List<UUID> rows = new ArrayList<>();
        for (int i = 0; i < maxRows; i++) {
            rows.add(db.insertRow(settings, "warm" + i, "created", "{}"));
        }
        ClaimBatch batch = store.claim(ordered(maxRows, Duration.ofSeconds(30)));
        assertThat(ids(batch)).containsExactlyInAnyOrderElementsOf(rows);
        store.markSent(batch.lease(), ids(batch));
    }

    private ReusingDataSource pool(String name) {
        ReusingDataSource pool = TestDatabase.reusing(TestServices.postgresUrl(), name);
        closeAtEnd.add(pool);
        return pool;
    }

    /**
     * Round 1 takes the turn by the try, chooses a1 and b1, and loses b1 to another transaction before it locks; round
     * 2 takes the turn by the try again and takes c1. Two tries, two releases: no count left on the pooled session.
     */
    @Test
    void aTurnTriedInEachRoundOfAClaimIsGivenBackEachTime() throws Exception {
        AtomicInteger tries = new AtomicInteger();
        AtomicBoolean loseB1 = new AtomicBoolean();
        AtomicBoolean b1Lost = new AtomicBoolean();
        Connection blocker = db.dataSource.getConnection();
        closeAtEnd.add(blocker);
        blocker.setAutoCommit(false);
        UUID[] b1 = new UUID[1];
        Jdbi jdbi = Jdbi.create(pool("turntry-rounds"));
        jdbi.addCustomizer(new StatementCustomizer() {
            @Override
            public void beforeExecution(PreparedStatement stmt, StatementContext ctx) throws SQLException {
                if (ctx.getRenderedSql().contains(TRY)) {
                    tries.incrementAndGet();
                }
                if (ctx.getRenderedSql().contains(" o WHERE o.event_id = ANY(:ids) AND ") /* locks the chosen rows, ending the turn or not */ && loseB1.compareAndSet(true, false)) {
                    try (Statement s = blocker.createStatement();
                         ResultSet rs = s.executeQuery("SELECT event_id FROM " + settings.qualifiedTable()
                                 + " WHERE event_id = '" + b1[0] + "' FOR UPDATE")) {
                        b1Lost.set(rs.next());
                    }
                }
            }
        });
        OutboxStore relay = PostgresOutbox.store(jdbi, settings);
        fullClaim(relay, 2);
        UUID a1 = db.insertRow(settings, "a", "created", "{}");
        b1[0] = db.insertRow(settings, "b", "created", "{}");
        UUID c1 = db.insertRow(settings, "c", "created", "{}");
        tries.set(0);
        loseB1.set(true);

        ClaimBatch batch = relay.claim(ordered(2, Duration.ofSeconds(30)));

        assertThat(b1Lost).as("b1 was locked by another transaction between the choice and the lock").isTrue();
        assertThat(ids(batch)).containsExactly(a1, c1);
        assertThat(tries).as("tries of the turn (one per round)").hasValue(2);
        assertThat(checks.turnHolders()).as("sessions holding the turn while the two-round batch is out").isEmpty();
        relay.markSent(batch.lease(), ids(batch));
        blocker.rollback();
        assertThat(checks.turnHolders()).as("sessions holding the turn once the claim's connection is back in its pool").isEmpty();
    }

    /** Round 1 takes the turn by the try, gives it up to park a row at claim, locks a1; round 2 tries again. */
    @Test
    void aTurnTriedAroundAParkingAtClaimIsGivenBack() throws Exception {
        AtomicInteger tries = new AtomicInteger();
        Jdbi jdbi = Jdbi.create(pool("turntry-park"));
        jdbi.addCustomizer(new StatementCustomizer() {
            @Override
            public void beforeExecution(PreparedStatement stmt, StatementContext ctx) {
                if (ctx.getRenderedSql().contains(TRY)) {
                    tries.incrementAndGet();
                }
            }
        });
        OutboxStore relay = PostgresOutbox.store(jdbi, settings);
        fullClaim(relay, 1);
        UUID a1 = db.insertRow(settings, "a", "created", "{}");
        UUID bad = db.insertRow(settings, "u", "created", "[1]"); // headers not an object: parked at claim
        tries.set(0);

        ClaimBatch batch = relay.claim(ordered(3, Duration.ofSeconds(30)));

        assertThat(ids(batch)).containsExactly(a1);
        assertThat(db.columnOf(settings, bad, "status")).isEqualTo("parked");
        assertThat(tries).as("tries of the turn (one per round)").hasValueGreaterThanOrEqualTo(2);
        assertThat(db.lockedByAnyone(settings, a1)).isTrue();
        assertThat(checks.turnHolders()).as("sessions holding the turn while the batch is out").isEmpty();
        relay.markSent(batch.lease(), ids(batch));
        assertThat(checks.turnHolders()).as("sessions holding the turn after the batch").isEmpty();
    }

    /**
     * The try's statement runs, and PostgreSQL grants the turn, but the claim sees a failure (what a cancel or a
     * client-side timeout that arrives with the result raises): the claim must fail without leaving the turn on its
     * pooled session, and the store's next claim on that pool must find it free.
     */
    @Test
    void aTryThatFailsAfterTheTurnWasGrantedLeavesNoTurnOnThePool() throws Exception {
        AtomicBoolean failNextTry = new AtomicBoolean();
        AtomicInteger tries = new AtomicInteger();
        ReusingDataSource pool = pool("turntry-fail");
        Jdbi jdbi = Jdbi.create(pool);
        jdbi.addCustomizer(new StatementCustomizer() {
            @Override
            public void afterExecution(PreparedStatement stmt, StatementContext ctx) throws SQLException {
                if (ctx.getRenderedSql().contains(TRY)) {
                    tries.incrementAndGet();
                    if (failNextTry.compareAndSet(true, false)) {
                        throw new SQLException("canceling statement due to user request", "57014");
                    }
                }
            }
        });
        OutboxStore relay = PostgresOutbox.store(jdbi, settings);
        fullClaim(relay, 1);
        UUID a1 = db.insertRow(settings, "a", "created", "{}");
        failNextTry.set(true);

        assertThatThrownBy(() -> relay.claim(ordered(1, Duration.ofSeconds(30))))
                .hasRootCauseMessage("canceling statement due to user request");
        assertThat(checks.turnHoldersAfter(2_000)).as("sessions holding the turn after the failed claim").isEmpty();
        assertThat(db.lockedByAnyone(settings, a1)).as("a1 after the failed claim").isFalse();

        tries.set(0);
        long started = System.nanoTime();
        ClaimBatch batch = relay.claim(ordered(1, Duration.ofSeconds(30)));
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        assertThat(ids(batch)).containsExactly(a1);
        assertThat(millis).as("the next claim took the turn at once (its bound is 500 ms)").isLessThan(400L);
        relay.markSent(batch.lease(), ids(batch));
        assertThat(checks.turnHolders()).isEmpty();
    }

    /**
     * Three relays, each with its own pool of reused connections and two workers, drain hot aggregates with leases of
     * 200 ms (the turn's bound: 20 ms), so that tries fail, claims wait in the lock's queue and some give up as they are
     * granted it. Each batch must keep its aggregates' order; once all are done no pooled session may hold the turn.
     */
    @Test
    void relaysWithPooledConnectionsNeverLeaveTheTurnHeld() throws Exception {
        Random random = new Random(7);
        int rows = 1500;
        StringBuilder values = new StringBuilder();
        for (int i = 0; i < rows; i++) {
            values.append(i == 0 ? "" : ", ").append("(gen_random_uuid(), 'order', 'a").append(random.nextInt(12))
                    .append("', 'E', '\\x7b7d')");
        }
        db.execute("INSERT INTO " + settings.qualifiedTable() + " (event_id, aggregate_type, aggregate_id, event_type,"
                + " payload) VALUES " + values);
        ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
        AtomicInteger tries = new AtomicInteger();
        AtomicInteger waits = new AtomicInteger();
        AtomicInteger waitedOut = new AtomicInteger();
        List<Thread> threads = new ArrayList<>();
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(40);
        for (int r = 0; r < 3; r++) {
            Jdbi jdbi = Jdbi.create(pool("turntry-relay-" + r));
            jdbi.addCustomizer(new StatementCustomizer() {
                @Override
                public void beforeExecution(PreparedStatement stmt, StatementContext ctx) {
                    if (ctx.getRenderedSql().contains(TRY)) {
                        tries.incrementAndGet();
                    }
                    if (ctx.getRenderedSql().contains("pg_advisory_lock(" + OutboxSql.CHOICE_TURN_LOCK_KEY)) {
                        waits.incrementAndGet();
                    }
                    if (ctx.getRenderedSql().contains("l.pid = pg_backend_pid() AND l.granted")) {
                        waitedOut.incrementAndGet();
                    }
                }
            });
            OutboxStore store = PostgresOutbox.store(jdbi, settings);
            for (int w = 0; w < 2; w++) {
                Random own = new Random(r * 31L + w);
                Thread thread = new Thread(() -> {
                    try (Connection check = db.dataSource.getConnection()) {
                        while (System.nanoTime() < until && problems.isEmpty()) {
                            ClaimBatch batch;
                            try {
                                batch = store.claim(ordered(1 + own.nextInt(8), Duration.ofMillis(200)));
                            } catch (RuntimeException e) {
                                continue; // a claim may fail (its session ended); it must not leave the turn held
                            }
                            if (batch.isEmpty()) {
                                if (checks.pending() == 0) {
                                    return;
                                }
                                Thread.sleep(own.nextInt(3));
                                continue;
                            }
                            String broken = checks.earlierOutside(check, ids(batch));
                            if (broken != null) {
                                problems.add(broken);
                                store.release(batch.lease(), ids(batch));
                                return;
                            }
                            try {
                                store.markSent(batch.lease(), ids(batch));
                            } catch (RuntimeException e) {
                                // a claim ended by PostgreSQL (200 ms leases on a busy host): its rows come back
                            }
                        }
                    } catch (Exception e) {
                        problems.add("worker failed: " + e);
                    }
                });
                threads.add(thread);
                thread.start();
            }
        }
        for (Thread thread : threads) {
            thread.join();
        }
        assertThat(problems).isEmpty();
        System.out.println("turn tries " + tries + ", waits in the queue " + waits + ", waits run out " + waitedOut);
        assertThat(tries.get()).as("tries of the turn").isPositive();
        assertThat(waits.get()).as("claims whose try failed and that waited in the lock's queue").isPositive();
        assertThat(checks.turnHoldersAfter(500)).as("sessions holding the turn once every relay's claims have ended"
                + " (their connections idle in their pools)").isEmpty();
    }
}
