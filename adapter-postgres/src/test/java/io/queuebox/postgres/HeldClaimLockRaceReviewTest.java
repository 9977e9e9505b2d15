package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Adversarial review of aa618e0 (HeldClaim on a ReentrantLock, the store's sweep through abortIfAbandoned with
 * tryLock, 'ended' and the deadline read without the lock): races between the sweep and an outcome or renewal of
 * the same claim, on real PostgreSQL connections.
 */
class HeldClaimLockRaceReviewTest {

    private static final int ROUNDS = 100;

    private TestDatabase db;
    private Jdbi jdbi;
    private String table;
    private ExecutorService pool;

    @BeforeEach
    void schema() {
        db = TestDatabase.withFreshSchema("lockrace");
        db.execute("CREATE SCHEMA \"" + db.schema + "\"");
        table = "\"" + db.schema + "\".r";
        db.execute("CREATE TABLE " + table + " (id uuid PRIMARY KEY, sent boolean NOT NULL DEFAULT false)");
        jdbi = Jdbi.create(db.dataSource);
        pool = Executors.newFixedThreadPool(3);
    }

    @AfterEach
    void drop() {
        pool.shutdownNow();
        db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid()"
                + " AND state LIKE 'idle in transaction%' AND query LIKE '%" + db.schema + "%'");
        db.close();
    }

    /** A claim on one fresh row, its transaction holding the row lock, abandoned by the clock already. */
    private HeldClaim abandonedClaim(UUID id, Handle handle, Duration lease) {
        db.execute("INSERT INTO " + table + " (id) VALUES ('" + id + "')");
        handle.begin();
        handle.createQuery("SELECT id FROM " + table + " WHERE id = :id FOR UPDATE").bind("id", id)
                .mapTo(UUID.class).one();
        long past = System.nanoTime() - lease.toNanos() - 5_000_000L;
        return new HeldClaim(handle, List.of(id), lease, past, past);
    }

    private boolean sent(UUID id) {
        return jdbi.withHandle(h -> h.createQuery("SELECT sent FROM " + table + " WHERE id = :id").bind("id", id)
                .mapTo(Boolean.class).one());
    }

    /**
     * The sweep (tryLock, abandoned by the clock, rolls back) against the outcome that ends the claim, started at the
     * same moment, many times. Whichever wins, an outcome that answered 1 must be committed, an outcome after the
     * abort must answer 0 and write nothing on the closed connection, and the connection must be closed at the end.
     */
    @Test
    void theSweepAgainstAFinalOutcomeNeverLosesOrFakesAMarkSent() throws Exception {
        int resolvedWins = 0;
        int abortWins = 0;
        for (int i = 0; i < ROUNDS; i++) {
            UUID id = UUID.randomUUID();
            Handle handle = jdbi.open();
            HeldClaim claim = abandonedClaim(id, handle, Duration.ofMillis(20));
            CyclicBarrier start = new CyclicBarrier(2);
            AtomicBoolean wroteOnClosed = new AtomicBoolean();
            Future<Integer> resolving = pool.submit(() -> {
                start.await();
                return claim.resolve(List.of(id), mine -> {
                    if (handle.isClosed()) {
                        wroteOnClosed.set(true);
                    }
                    return handle.createUpdate("UPDATE " + table + " SET sent = true WHERE id = ANY(:ids)")
                            .bindArray("ids", UUID.class, mine).execute();
                });
            });
            Future<Boolean> sweeping = pool.submit(() -> {
                start.await();
                return claim.abortIfAbandoned();
            });
            int resolved = resolving.get(10, TimeUnit.SECONDS);
            boolean aborted = sweeping.get(10, TimeUnit.SECONDS);

            assertThat(wroteOnClosed).as("round %d: a write on a closed connection", i).isFalse();
            assertThat(resolved == 1 && aborted).as("round %d: outcome 1 and abort both", i).isFalse();
            assertThat(resolved == 1 || aborted).as("round %d: neither outcome nor abort", i).isTrue();
            assertThat(sent(id)).as("round %d: resolved=%d aborted=%s", i, resolved, aborted).isEqualTo(resolved == 1);
            assertThat(claim.ended()).isTrue();
            assertThat(handle.isClosed()).as("round %d: the connection is given back", i).isTrue();
            if (aborted) {
                abortWins++;
            } else {
                resolvedWins++;
            }
        }
        System.out.printf("sweep vs final outcome: outcome first %d, sweep first %d%n", resolvedWins, abortWins);
    }

    /**
     * The sweep against a renewal that starts at the same moment: a renewal that answered 1 leaves a claim that still
     * holds its row (open connection, row locked, later outcome commits), and a sweep that aborted leaves a
     * renewal that answered 0.
     */
    @Test
    void theSweepAgainstARenewalNeverLeavesAClaimThatAnswersForRowsItLost() throws Exception {
        int renewWins = 0;
        int abortWins = 0;
        for (int i = 0; i < ROUNDS; i++) {
            UUID id = UUID.randomUUID();
            Handle handle = jdbi.open();
            HeldClaim claim = abandonedClaim(id, handle, Duration.ofMillis(20));
            CyclicBarrier start = new CyclicBarrier(2);
            Future<Integer> renewing = pool.submit(() -> {
                start.await();
                return claim.renew(Duration.ofSeconds(30), () -> handle.createQuery(
                        "SELECT set_config('idle_in_transaction_session_timeout', '30000', true)").mapTo(String.class)
                        .one());
            });
            Future<Boolean> sweeping = pool.submit(() -> {
                start.await();
                return claim.abortIfAbandoned();
            });
            int renewed = renewing.get(10, TimeUnit.SECONDS);
            boolean aborted = sweeping.get(10, TimeUnit.SECONDS);
            assertThat(renewed == 1 && aborted).as("round %d: renewed and aborted", i).isFalse();
            assertThat(renewed == 1 || aborted).as("round %d: neither", i).isTrue();
            if (renewed == 1) {
                renewWins++;
                assertThat(claim.ended()).isFalse();
                assertThat(claim.remaining()).isGreaterThan(Duration.ofSeconds(20));
                assertThat(claim.abortIfAbandoned()).as("a renewed claim swept").isFalse();
                assertThat(claim.resolve(List.of(id), mine -> handle.createUpdate("UPDATE " + table
                        + " SET sent = true WHERE id = ANY(:ids)").bindArray("ids", UUID.class, mine).execute()))
                        .isEqualTo(1);
                assertThat(sent(id)).isTrue();
            } else {
                abortWins++;
                assertThat(sent(id)).isFalse();
            }
            assertThat(handle.isClosed()).isTrue();
        }
        System.out.printf("sweep vs renewal: renewal first %d, sweep first %d%n", renewWins, abortWins);
    }

    /**
     * A statement in progress (the write waits on a latch after its UPDATE) past the claim's deadline: the sweep
     * answers at once without aborting, ended() and remaining() answer at once, and the outcome then commits.
     */
    @Test
    void theSweepLeavesAClaimWithAStatementInProgressAloneAndDoesNotWait() throws Exception {
        UUID id = UUID.randomUUID();
        Handle handle = jdbi.open();
        HeldClaim claim = abandonedClaim(id, handle, Duration.ofMillis(20));
        CountDownLatch inStatement = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        Future<Integer> resolving = pool.submit(() -> claim.resolve(List.of(id), mine -> {
            int n = handle.createUpdate("UPDATE " + table + " SET sent = true WHERE id = ANY(:ids)")
                    .bindArray("ids", UUID.class, mine).execute();
            inStatement.countDown();
            try {
                finish.await();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
            return n;
        }));
        assertThat(inStatement.await(10, TimeUnit.SECONDS)).isTrue();
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300);
        int sweeps = 0;
        while (System.nanoTime() < until) {
            long t0 = System.nanoTime();
            assertThat(claim.abortIfAbandoned()).isFalse();
            assertThat(claim.ended()).isFalse();
            assertThat(claim.remaining()).isEqualTo(Duration.ZERO);
            assertThat(System.nanoTime() - t0).isLessThan(TimeUnit.MILLISECONDS.toNanos(50));
            sweeps++;
        }
        finish.countDown();
        assertThat(resolving.get(10, TimeUnit.SECONDS)).isEqualTo(1);
        assertThat(claim.ended()).isTrue();
        assertThat(handle.isClosed()).isTrue();
        assertThat(sent(id)).isTrue();
        System.out.println("sweeps during the statement: " + sweeps);
    }

    /**
     * Two rows; the outcome of the first runs 1.5 s on a 500 ms lease. PostgreSQL's idle countdown starts when the
     * statement ends, so the claim is alive when the outcome answers; the store counted its countdown from the
     * statement's start, and the next sweep rolled back the claim right after its outcome answered 1: a write the
     * caller was told of was undone, and the whole batch came back (found by helper-41; failed before the fix).
     */
    @Test
    void aPartialOutcomeLongerThanTheLeaseIsNotSweptRightAfterItAnswered() throws Exception {
        UUID a = UUID.randomUUID();
        UUID b = UUID.randomUUID();
        db.execute("INSERT INTO " + table + " (id) VALUES ('" + a + "'), ('" + b + "')");
        Handle handle = jdbi.open();
        handle.begin();
        handle.createQuery("SELECT id FROM " + table + " WHERE id IN ('" + a + "', '" + b + "') FOR UPDATE")
                .mapTo(UUID.class).list();
        Duration lease = Duration.ofMillis(500);
        long now = System.nanoTime();
        HeldClaim claim = new HeldClaim(handle, List.of(a, b), lease, now, now);
        int answered = claim.resolve(List.of(a), mine -> {
            int n = handle.createUpdate("UPDATE " + table + " SET sent = true WHERE id = ANY(:ids)")
                    .bindArray("ids", UUID.class, mine).execute();
            handle.createQuery("SELECT pg_sleep(1.5)::text").mapTo(String.class).one();
            return n;
        });
        assertThat(answered).isEqualTo(1);

        assertThat(claim.abortIfAbandoned()).as("swept right after its outcome answered").isFalse();
        assertThat(claim.resolve(List.of(b), mine -> handle.createUpdate("UPDATE " + table
                + " SET sent = true WHERE id = ANY(:ids)").bindArray("ids", UUID.class, mine).execute())).isEqualTo(1);
        assertThat(claim.ended()).isTrue();
        assertThat(sent(a) && sent(b)).as("both outcomes committed").isTrue();
    }

    /** The converse: a lease after its latest statement's answer, with no word since, the claim is swept. */
    @Test
    void aClaimIsSweptOnceALeaseHasPassedSinceItsLatestAnswer() throws Exception {
        UUID a = UUID.randomUUID();
        UUID b = UUID.randomUUID();
        db.execute("INSERT INTO " + table + " (id) VALUES ('" + a + "'), ('" + b + "')");
        Handle handle = jdbi.open();
        handle.begin();
        Duration lease = Duration.ofMillis(200);
        long now = System.nanoTime();
        HeldClaim claim = new HeldClaim(handle, List.of(a, b), lease, now, now);
        assertThat(claim.resolve(List.of(a), mine -> handle.createUpdate("UPDATE " + table
                + " SET sent = true WHERE id = ANY(:ids)").bindArray("ids", UUID.class, mine).execute())).isEqualTo(1);
        TimeUnit.MILLISECONDS.sleep(300);

        assertThat(claim.abortIfAbandoned()).isTrue();
        assertThat(claim.ended()).isTrue();
        assertThat(handle.isClosed()).isTrue();
        assertThat(sent(a)).as("the outcome of a claim swept before it committed").isFalse();
    }

    /** ended() read without the lock must never be seen true while the claim still answers for rows. */
    @Test
    void endedIsNeverTrueWhileAnOutcomeCanStillSucceed() throws Exception {
        AtomicInteger badSightings = new AtomicInteger();
        for (int i = 0; i < 100; i++) {
            UUID a = UUID.randomUUID();
            UUID b = UUID.randomUUID();
            db.execute("INSERT INTO " + table + " (id) VALUES ('" + a + "'), ('" + b + "')");
            Handle handle = jdbi.open();
            handle.begin();
            long now = System.nanoTime();
            HeldClaim claim = new HeldClaim(handle, List.of(a, b), Duration.ofSeconds(30), now, now);
            AtomicBoolean stop = new AtomicBoolean();
            AtomicBoolean sawEnded = new AtomicBoolean();
            Future<?> watcher = pool.submit(() -> {
                while (!stop.get()) {
                    if (claim.ended()) {
                        sawEnded.set(true);
                    }
                }
            });
            assertThat(claim.resolve(List.of(a), mine -> handle.createUpdate("UPDATE " + table
                    + " SET sent = true WHERE id = ANY(:ids)").bindArray("ids", UUID.class, mine).execute()))
                    .isEqualTo(1);
            boolean endedBeforeLast = sawEnded.get();
            assertThat(claim.resolve(List.of(b), mine -> handle.createUpdate("UPDATE " + table
                    + " SET sent = true WHERE id = ANY(:ids)").bindArray("ids", UUID.class, mine).execute()))
                    .isEqualTo(1);
            stop.set(true);
            watcher.get(5, TimeUnit.SECONDS);
            if (endedBeforeLast) {
                badSightings.incrementAndGet();
            }
            assertThat(sent(a)).isTrue();
            assertThat(sent(b)).isTrue();
        }
        assertThat(badSightings).hasValue(0);
    }
}
