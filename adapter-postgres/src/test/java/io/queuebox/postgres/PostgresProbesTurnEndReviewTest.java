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
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
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
 * Probes of 76943dd (OutboxSql lockChosenEndingTurn: the lock of the chosen rows and the end of the turn among
 * processes in one statement) that found no defect: the plan under custom and generic plans (the unlock runs once
 * the locking CTE was read to its end), a failure the claim sees after the statement ran (the turn is given back
 * once, by the statement; the claim fails and leaves no lock), and relays with pooled connections, one of them on
 * generic plans from the first execution, draining hot aggregates with short leases.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class PostgresProbesTurnEndReviewTest {

    private static final String UNLOCK = "pg_advisory_unlock(" + OutboxSql.CHOICE_TURN_LOCK_KEY;
    private static final String LOCK = " o WHERE o.event_id = ANY(:ids) AND ";

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private TurnChecks checks;
    private final List<AutoCloseable> closeAtEnd = new ArrayList<>();

    @BeforeEach
    void schema() {
        db = TestDatabase.withFreshSchema("turnendprobe");
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

    private ReusingDataSource pool(String url, String name) {
        ReusingDataSource pool = TestDatabase.reusing(url, name);
        closeAtEnd.add(pool);
        return pool;
    }

    /**
     * The statement, planned custom and generic (and with nested loops discouraged): a nested loop whose outer side
     * is the one row of {@code ended}, whose aggregate reads every row of {@code locked} before the unlock is
     * projected; the statement leaves the rows locked and the turn free.
     */
    @Test
    void theUnlockRunsAfterEveryChosenRowIsLockedUnderCustomAndGenericPlans() throws Exception {
        List<UUID> rows = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            rows.add(db.insertRow(settings, "p" + (i % 7), "created", "{}"));
        }
        db.execute("ANALYZE " + settings.qualifiedTable());
        String lock = new OutboxSql(settings).lockChosenEndingTurn
                .replaceAll("(?<![:\\w]):ids\\b", "\\$1").replaceAll("(?<![:\\w]):millis\\b", "\\$2");
        assertThat(lock).doesNotContain(":ids").doesNotContain(":millis");
        String idArray = rows.stream().map(UUID::toString).collect(Collectors.joining(",", "'{", "}'"));
        for (String mode : List.of("force_custom_plan", "force_generic_plan", "force_generic_plan;nestloop_off")) {
            try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement()) {
                c.setAutoCommit(false);
                s.execute("SET LOCAL plan_cache_mode = " + mode.split(";")[0]);
                if (mode.endsWith("nestloop_off")) {
                    s.execute("SET LOCAL enable_nestloop = off");
                }
                s.execute("PREPARE lock_ending(uuid[], text) AS " + lock);
                for (int run = 0; run < 7; run++) { // past the five custom plans before a generic one is considered
                    s.execute("SELECT pg_advisory_lock(" + OutboxSql.CHOICE_TURN_LOCK_KEY + ", '"
                            + settings.qualifiedTable() + "'::regclass::oid::integer)");
                    List<String> plan = new ArrayList<>();
                    try (ResultSet rs = s.executeQuery("EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF)"
                            + " EXECUTE lock_ending(" + idArray + ", '30000')")) {
                        while (rs.next()) {
                            plan.add(rs.getString(1));
                        }
                    }
                    String text = String.join("\n", plan);
                    assertThat(plan.get(0)).as(mode + "\n" + text).startsWith("Nested Loop Left Join");
                    int ended = indexOf(plan, "CTE Scan on ended");
                    int locked = indexOf(plan, "CTE Scan on locked l ");
                    assertThat(ended).as(mode + ": the one row of ended is the outer side\n" + text)
                            .isPositive().isLessThan(locked);
                    int cteEnded = indexOf(plan, "CTE ended");
                    assertThat(cteEnded).as(mode + "\n" + text).isPositive();
                    int aggregate = indexOf(plan, "Aggregate (actual rows=1 loops=1)", cteEnded);
                    assertThat(aggregate).as(mode + "\n" + text).isPositive();
                    assertThat(plan.get(aggregate + 2).trim()).as(mode + ": the count reads locked to its end\n" + text)
                            .startsWith("->  CTE Scan on locked (actual rows=" + rows.size() + " loops=1)");
                    int unlock = indexOf(plan, "Output: " + UNLOCK + ",", cteEnded);
                    assertThat(unlock).as(mode + ": the unlock is projected above the count, in CTE ended\n" + text)
                            .isGreaterThan(cteEnded).isLessThan(aggregate);
                    int cteLocked = indexOf(plan, "CTE locked");
                    assertThat(indexOf(plan, "One-Time Filter", cteLocked)).as(mode + ": HOLDS_FOR and ENDS_STALLED run"
                            + " once, in the locking CTE, before its first row is locked\n" + text)
                            .isPositive().isLessThan(cteEnded);
                    assertThat(indexOf(plan, "pg_terminate_backend", cteLocked)).as(mode + "\n" + text)
                            .isPositive().isLessThan(cteEnded);
                    assertThat(turnHeldBy(s)).as(mode + ": the turn after the statement").isFalse();
                    assertThat(db.lockedByAnyone(settings, rows.get(rows.size() - 1))).isTrue();
                }
                c.rollback();
            }
        }
    }

    private static int indexOf(List<String> plan, String fragment) {
        return indexOf(plan, fragment, 0);
    }

    private static int indexOf(List<String> plan, String fragment, int from) {
        for (int i = from; i < plan.size(); i++) {
            if (plan.get(i).contains(fragment)) {
                return i;
            }
        }
        return -1;
    }

    private boolean turnHeldBy(Statement s) throws SQLException {
        try (ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = "
                + OutboxSql.CHOICE_TURN_LOCK_KEY + " AND pid = pg_backend_pid() AND granted")) {
            rs.next();
            return rs.getLong(1) > 0;
        }
    }

    /**
     * The lock statement runs (rows locked, turn given back by it) and then the claim sees a failure (a client-side
     * timeout arriving with the answer). The claim fails; its separate release finds the turn already given back
     * (false, no error); the pooled connection goes back without the turn or the locks, and the next claim on it
     * takes the turn at once.
     */
    @Test
    void aFailureSeenAfterTheLockRanFailsTheClaimAndLeavesNeitherTurnNorLocks() throws Exception {
        AtomicBoolean failNextLock = new AtomicBoolean();
        AtomicInteger unlocks = new AtomicInteger();
        ReusingDataSource pool = pool(TestServices.postgresUrl(), "turnend-fail");
        Jdbi jdbi = Jdbi.create(pool);
        jdbi.addCustomizer(new StatementCustomizer() {
            @Override
            public void afterExecution(PreparedStatement stmt, StatementContext ctx) throws SQLException {
                if (ctx.getRenderedSql().contains(UNLOCK)) {
                    unlocks.incrementAndGet();
                }
                if (ctx.getRenderedSql().contains(LOCK) && ctx.getRenderedSql().contains(UNLOCK)
                        && failNextLock.compareAndSet(true, false)) {
                    throw new SQLException("canceling statement due to user request", "57014");
                }
            }
        });
        OutboxStore relay = PostgresOutbox.store(jdbi, settings);
        UUID warm = db.insertRow(settings, "warm", "created", "{}");
        ClaimBatch full = relay.claim(ordered(1, Duration.ofSeconds(30)));
        assertThat(ids(full)).containsExactly(warm);
        relay.markSent(full.lease(), ids(full));
        UUID a1 = db.insertRow(settings, "a", "created", "{}");
        UUID a2 = db.insertRow(settings, "a", "updated", "{}");
        failNextLock.set(true);
        unlocks.set(0);

        assertThatThrownBy(() -> relay.claim(ordered(1, Duration.ofSeconds(30))))
                .hasRootCauseMessage("canceling statement due to user request");
        assertThat(unlocks).as("the lock that ended the turn, then the separate release after the failure").hasValue(2);
        assertThat(checks.turnHolders()).as("sessions holding the turn after the failed claim").isEmpty();
        assertThat(db.lockedByAnyone(settings, a1)).as("a1 after the failed claim").isFalse();

        long started = System.nanoTime();
        ClaimBatch batch = relay.claim(ordered(2, Duration.ofSeconds(30)));
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        assertThat(ids(batch)).containsExactly(a1, a2);
        assertThat(millis).as("the next claim on the pool took the turn at once (bound 500 ms)").isLessThan(400L);
        relay.markSent(batch.lease(), ids(batch));
        assertThat(checks.turnHolders()).isEmpty();
    }

    /**
     * Three relays, each with its own pool of reused connections and two workers, drain hot aggregates with 200 ms
     * leases (bound 20 ms); relay 0 runs every statement as a server-prepared statement on a generic plan from the
     * first execution. Each batch keeps its aggregates' order; once all are done no pooled session holds the turn.
     */
    @Test
    void relaysOnCustomAndGenericPlansNeverLeaveTheTurnHeldNorBreakOrder() throws Exception {
        Random random = new Random(11);
        int rows = 1200;
        StringBuilder values = new StringBuilder();
        for (int i = 0; i < rows; i++) {
            values.append(i == 0 ? "" : ", ").append("(gen_random_uuid(), 'order', 'a").append(random.nextInt(10))
                    .append("', 'E', '\\x7b7d')");
        }
        db.execute("INSERT INTO " + settings.qualifiedTable() + " (event_id, aggregate_type, aggregate_id, event_type,"
                + " payload) VALUES " + values);
        ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
        AtomicInteger endingLocks = new AtomicInteger();
        AtomicInteger failedClaims = new AtomicInteger();
        List<Thread> threads = new ArrayList<>();
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(40);
        String generic = TestServices.postgresUrl() + "&prepareThreshold=1&options="
                + URLEncoder.encode("-c plan_cache_mode=force_generic_plan", StandardCharsets.UTF_8).replace("+", "%20");
        for (int r = 0; r < 3; r++) {
            Jdbi jdbi = Jdbi.create(pool(r == 0 ? generic : TestServices.postgresUrl(), "turnend-relay-" + r));
            jdbi.addCustomizer(new StatementCustomizer() {
                @Override
                public void beforeExecution(PreparedStatement stmt, StatementContext ctx) {
                    if (ctx.getRenderedSql().contains(LOCK) && ctx.getRenderedSql().contains(UNLOCK)) {
                        endingLocks.incrementAndGet();
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
                                failedClaims.incrementAndGet();
                                continue;
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
        System.out.println("locks that ended the turn " + endingLocks + ", failed claims " + failedClaims
                + ", pending at the end " + checks.pending());
        assertThat(problems).isEmpty();
        assertThat(endingLocks.get()).as("locks that ended the turn").isPositive();
        assertThat(checks.turnHoldersAfter(500)).as("sessions holding the turn once every relay's claims have ended").isEmpty();
    }
}
