package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Adversarial review of aa618e0 through the real store: three workers with a short lease, a renewer that renews
 * some in-flight claims and lets others lapse, workers that sometimes "publish" longer than the lease, and a
 * locker that makes mark-sents wait on a table lock past the lease while other claims sweep. Checks at-least-once,
 * fencing (no row reported sent by two claims, no partial answer), order per aggregate of the handed-out batches,
 * that every row ends up sent, that no call hangs, and that no held claim's session is left open.
 */
class PostgresHeldClaimSweepStressReviewTest {

    private static final Duration LEASE = Duration.ofMillis(400);
    private static final int AGGREGATES = 8;
    private static final int PER_AGGREGATE = 15;

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private OutboxStore store;

    @BeforeEach
    void schema() {
        db = TestDatabase.withFreshSchema("sweepstress");
        settings = db.settings().holdRowLocks(true).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        store = PostgresOutbox.store(db.dataSource, settings);
    }

    @AfterEach
    void drop() {
        db.endHeldClaims();
        db.close();
    }

    private record Published(String aggregate, long seq, UUID id) {
    }

    @Test
    void workersRenewerAndATableLockerNeverLoseFakeOrReorderRows() throws Exception {
        Map<UUID, String> aggregateOf = new HashMap<>();
        for (int i = 0; i < PER_AGGREGATE; i++) {
            for (int a = 0; a < AGGREGATES; a++) {
                aggregateOf.put(db.insertRow(settings, "agg" + a, "E", "{}"), "agg" + a);
            }
        }
        List<Published> log = Collections.synchronizedList(new ArrayList<>());
        Map<UUID, AtomicInteger> reportedSent = new ConcurrentHashMap<>();
        Map<LeaseToken, Boolean> inFlight = new ConcurrentHashMap<>();
        AtomicInteger partialAnswers = new AtomicInteger();
        AtomicInteger lostAnswers = new AtomicInteger();
        AtomicInteger errors = new AtomicInteger();
        AtomicInteger claims = new AtomicInteger();
        AtomicInteger slowestCallMillis = new AtomicInteger();
        AtomicBoolean stop = new AtomicBoolean();
        ExecutorService pool = Executors.newFixedThreadPool(5);
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(40);
        List<Future<?>> workers = new ArrayList<>();
        for (int w = 0; w < 3; w++) {
            workers.add(pool.submit(() -> {
                ThreadLocalRandom random = ThreadLocalRandom.current();
                while (!stop.get() && System.nanoTime() < until && reportedSent.size() < aggregateOf.size()) {
                    try {
                        long t0 = System.nanoTime();
                        ClaimBatch batch = store.claim(new ClaimRequest("relay", 4, LEASE, Ordering.PER_AGGREGATE,
                                ParkingPolicy.HOLD_AGGREGATE));
                        slowestCallMillis.accumulateAndGet((int) ((System.nanoTime() - t0) / 1_000_000), Math::max);
                        claims.incrementAndGet();
                        if (batch.deliveries().isEmpty()) {
                            Thread.sleep(20);
                            continue;
                        }
                        for (ClaimedDelivery d : batch.deliveries()) {
                            log.add(new Published(d.event().aggregateId(), d.sequence(), d.eventId()));
                        }
                        inFlight.put(batch.lease(), Boolean.TRUE);
                        Thread.sleep(random.nextInt(10) < 7 ? random.nextInt(100) : 300 + random.nextInt(600));
                        List<UUID> ids = batch.deliveries().stream().map(ClaimedDelivery::eventId).toList();
                        int answer = store.markSent(batch.lease(), ids);
                        inFlight.remove(batch.lease());
                        if (answer == ids.size()) {
                            ids.forEach(id -> reportedSent.computeIfAbsent(id, k -> new AtomicInteger())
                                    .incrementAndGet());
                        } else if (answer == 0) {
                            lostAnswers.incrementAndGet();
                        } else {
                            partialAnswers.incrementAndGet();
                        }
                    } catch (InterruptedException e) {
                        return;
                    } catch (RuntimeException e) {
                        errors.incrementAndGet();
                        System.out.println("worker error: " + e);
                    }
                }
            }));
        }
        Future<?> renewer = pool.submit(() -> {
            ThreadLocalRandom random = ThreadLocalRandom.current();
            while (!stop.get()) {
                for (LeaseToken lease : Set.copyOf(inFlight.keySet())) {
                    if (random.nextBoolean()) {
                        try {
                            store.renew(lease, LEASE);
                        } catch (RuntimeException e) {
                            errors.incrementAndGet();
                            System.out.println("renew error: " + e);
                        }
                    }
                }
                try {
                    Thread.sleep(100);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        Future<?> locker = pool.submit(() -> {
            while (!stop.get()) {
                try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement()) {
                    Thread.sleep(700);
                    c.setAutoCommit(false);
                    s.execute("LOCK TABLE " + settings.qualifiedTable() + " IN SHARE MODE");
                    Thread.sleep(600); // longer than the lease: mark-sents wait while other claims sweep
                    c.rollback();
                } catch (InterruptedException e) {
                    return;
                } catch (Exception e) {
                    System.out.println("locker error: " + e);
                }
            }
        });
        for (Future<?> worker : workers) {
            worker.get(60, TimeUnit.SECONDS);
        }
        stop.set(true);
        renewer.get(10, TimeUnit.SECONDS);
        locker.get(10, TimeUnit.SECONDS);
        pool.shutdownNow();

        // one more claim sweeps what is left
        ClaimBatch last = store.claim(new ClaimRequest("relay", 100, LEASE, Ordering.PER_AGGREGATE,
                ParkingPolicy.HOLD_AGGREGATE));
        System.out.printf("claims %d, rows %d, reported sent %d, lost answers %d, partial %d, errors %d,"
                        + " slowest claim %d ms, published %d, left %d%n", claims.get(), aggregateOf.size(),
                reportedSent.size(), lostAnswers.get(), partialAnswers.get(), errors.get(), slowestCallMillis.get(),
                log.size(), last.deliveries().size());
        if (!last.deliveries().isEmpty()) {
            store.release(last.lease(), last.deliveries().stream().map(ClaimedDelivery::eventId).toList());
        }

        assertThat(partialAnswers).as("partial answers to a whole-batch mark-sent").hasValue(0);
        assertThat(reportedSent.values()).as("rows reported sent by more than one claim")
                .allSatisfy(n -> assertThat(n.get()).isEqualTo(1));
        int notSent = count("SELECT count(*) FROM " + settings.qualifiedTable() + " WHERE status <> 'sent'");
        assertThat(reportedSent).as("every row reported sent").hasSize(aggregateOf.size());
        assertThat(notSent).as("rows not sent in the table").isZero();
        for (UUID id : reportedSent.keySet()) {
            assertThat(db.columnOf(settings, id, "status")).isEqualTo("sent");
        }
        assertThat(count("SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'"
                + " AND query LIKE '%" + db.schema + "%'")).as("held claims' sessions left open").isZero();
        assertThat(slowestCallMillis.get()).as("slowest claim (ms)").isLessThan(5_000);
        Optional<Duration> due = store.timeUntilNextDue();
        assertThat(due).isEmpty();

        // Order per aggregate: first deliveries in sequence order, and a row delivered again after a later row of
        // its aggregate is followed by a new delivery of that later row (a retry never overtakes a later event).
        Map<String, List<Published>> byAggregate = new HashMap<>();
        synchronized (log) {
            for (Published p : log) {
                byAggregate.computeIfAbsent(p.aggregate(), k -> new ArrayList<>()).add(p);
            }
        }
        List<String> violations = new ArrayList<>();
        for (var entry : byAggregate.entrySet()) {
            List<Published> seq = entry.getValue();
            long highestFirst = Long.MIN_VALUE;
            Set<Long> seen = new java.util.HashSet<>();
            for (Published p : seq) {
                if (seen.add(p.seq())) {
                    if (p.seq() < highestFirst) {
                        violations.add(entry.getKey() + ": first delivery of " + p.seq() + " after " + highestFirst);
                    }
                    highestFirst = Math.max(highestFirst, p.seq());
                }
            }
            for (int i = 0; i < seq.size(); i++) {
                for (int j = 0; j < i; j++) {
                    long later = seq.get(j).seq();
                    if (later > seq.get(i).seq()) {
                        boolean redelivered = false;
                        for (int k = i + 1; k < seq.size() && !redelivered; k++) {
                            redelivered = seq.get(k).seq() == later;
                        }
                        if (!redelivered) {
                            violations.add(entry.getKey() + ": " + seq.get(i).seq() + " delivered again after "
                                    + later + ", which was not delivered again");
                        }
                    }
                }
            }
        }
        assertThat(violations).as("order per aggregate").isEmpty();
    }

    private int count(String sql) throws Exception {
        try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getInt(1);
        }
    }
}
