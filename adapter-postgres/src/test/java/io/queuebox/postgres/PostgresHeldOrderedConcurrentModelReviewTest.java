package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.Park;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.ports.Reschedule;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Review of b6b22af: several held ordered claimers (separate stores, as separate relay processes) claim, send,
 * reschedule, park and release rows of a few hot aggregates at once, in many rounds per claim (small batches, rows
 * lost to other claimers between choice and lock, undeliverable rows parked at claim). Right after each claim, while
 * it still holds its rows, every delivered row's earlier siblings that can hold it back must be in the same batch:
 * none may be pending (or parked under HOLD_AGGREGATE) outside it. At the end every row the rule allows is sent.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class PostgresHeldOrderedConcurrentModelReviewTest {

    private static TestDatabase db;
    private static PostgresOutboxSettings settings;

    @BeforeAll
    static void schema() {
        db = TestDatabase.withFreshSchema("claim_conc");
        settings = db.settings().holdRowLocks(true).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
    }

    @AfterAll
    static void drop() {
        db.endHeldClaims();
        db.close();
    }

    @Test
    void concurrentHeldClaimersKeepEachAggregatesOrder() throws Exception {
        for (int seed = 1; seed <= 8; seed++) {
            trial(seed);
        }
    }

    private void trial(int seed) throws Exception {
        Random random = new Random(seed);
        db.execute("TRUNCATE " + settings.qualifiedTable());
        ParkingPolicy policy = seed % 2 == 0 ? ParkingPolicy.HOLD_AGGREGATE : ParkingPolicy.CONTINUE_AGGREGATE;
        int aggregates = 3 + random.nextInt(10);
        int rows = 150 + random.nextInt(250);
        StringBuilder values = new StringBuilder();
        for (int i = 0; i < rows; i++) {
            String aggregate = "a" + random.nextInt(aggregates);
            int state = random.nextInt(100);
            String eventType = state < 3 ? "' '" : "'E'"; // blank: undeliverable, parked at claim
            String column = state < 90 ? "'pending', now()" : state < 95 ? "'pending', now() + interval '300 milliseconds'"
                    : "'sent', now()";
            values.append(i == 0 ? "" : ", ").append("(gen_random_uuid(), 'order', '").append(aggregate)
                    .append("', ").append(eventType).append(", '\\x7b7d', ").append(column).append(")");
        }
        db.execute("INSERT INTO " + settings.qualifiedTable() + " (event_id, aggregate_type, aggregate_id, event_type,"
                + " payload, status, next_attempt_at) VALUES " + values);

        ConcurrentLinkedQueue<String> violations = new ConcurrentLinkedQueue<>();
        int claimers = 3;
        List<Thread> threads = new ArrayList<>();
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(12);
        for (int c = 0; c < claimers; c++) {
            OutboxStore store = PostgresOutbox.store(db.dataSource, settings);
            Random own = new Random(seed * 31L + c);
            Thread thread = new Thread(() -> {
                try (Connection check = db.dataSource.getConnection()) {
                    while (System.nanoTime() < until && violations.isEmpty()) {
                        int maxRows = 1 + own.nextInt(own.nextBoolean() ? 4 : 20);
                        ClaimBatch batch = store.claim(new ClaimRequest("c", maxRows, Duration.ofSeconds(20),
                                Ordering.PER_AGGREGATE, policy));
                        if (batch.isEmpty()) {
                            Thread.sleep(own.nextInt(5));
                            if (remaining(policy) == 0) {
                                return;
                            }
                            continue;
                        }
                        List<UUID> ids = batch.deliveries().stream().map(ClaimedDelivery::eventId).toList();
                        String broken = earlierOutside(check, ids, policy);
                        if (broken != null) {
                            violations.add("seed " + seed + ", " + policy + ", maxRows " + maxRows + ": " + broken);
                            store.release(batch.lease(), ids);
                            return;
                        }
                        if (own.nextInt(4) == 0) {
                            Thread.sleep(own.nextInt(4));
                        }
                        List<UUID> sent = new ArrayList<>();
                        List<Reschedule> retries = new ArrayList<>();
                        List<Park> parks = new ArrayList<>();
                        List<UUID> released = new ArrayList<>();
                        for (UUID id : ids) {
                            int o = own.nextInt(100);
                            if (o < 75) {
                                sent.add(id);
                            } else if (o < 88) {
                                retries.add(new Reschedule(id, Duration.ofMillis(own.nextInt(30)), "retry"));
                            } else if (o < 91) {
                                parks.add(new Park(id, "park"));
                            } else {
                                released.add(id);
                            }
                        }
                        if (!retries.isEmpty()) {
                            store.reschedule(batch.lease(), retries);
                        }
                        if (!parks.isEmpty()) {
                            store.park(batch.lease(), parks);
                        }
                        if (!released.isEmpty()) {
                            store.release(batch.lease(), released);
                        }
                        if (!sent.isEmpty()) {
                            store.markSent(batch.lease(), sent);
                        }
                    }
                } catch (Exception e) {
                    violations.add("seed " + seed + ": claimer failed: " + e);
                }
            });
            threads.add(thread);
            thread.start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        db.endHeldClaims();
        assertThat(violations).as("claims that took a row while an earlier sibling that holds it back was outside the batch")
                .isEmpty();
        // At least once: whatever the rule allows is claimable; a last lone claimer drains it.
        OutboxStore last = PostgresOutbox.store(db.dataSource, settings);
        for (int i = 0; i < 500 && remaining(policy) > 0; i++) {
            ClaimBatch batch = last.claim(new ClaimRequest("last", 50, Duration.ofSeconds(20), Ordering.PER_AGGREGATE,
                    policy));
            if (batch.isEmpty()) {
                Thread.sleep(20);
                continue;
            }
            last.markSent(batch.lease(), batch.deliveries().stream().map(ClaimedDelivery::eventId).toList());
        }
        assertThat(remaining(policy)).as("seed " + seed + ", " + policy + ": pending rows the rule allows, left unclaimed")
                .isZero();
    }

    /** Pending rows not held back by an earlier parked row under HOLD_AGGREGATE (parked ones under CONTINUE never). */
    private static int remaining(ParkingPolicy policy) throws Exception {
        try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM " + settings.qualifiedTable() + " o WHERE o.status ="
                     + " 'pending' AND NOT EXISTS (SELECT 1 FROM " + settings.qualifiedTable() + " p WHERE p.status ="
                     + " 'parked' AND p.aggregate_type = o.aggregate_type AND p.aggregate_id = o.aggregate_id"
                     + " AND p.seq < o.seq AND " + (policy == ParkingPolicy.HOLD_AGGREGATE) + ")")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    /** The first delivered row with an earlier sibling that holds it back outside the batch, described; else null. */
    private static String earlierOutside(Connection check, List<UUID> ids, ParkingPolicy policy) throws Exception {
        String list = ids.stream().map(id -> "'" + id + "'").collect(Collectors.joining(", "));
        String holds = policy == ParkingPolicy.HOLD_AGGREGATE ? "e.status <> 'sent'" : "e.status = 'pending'";
        try (Statement s = check.createStatement();
             ResultSet rs = s.executeQuery("SELECT d.seq, d.aggregate_id, e.seq, e.status, e.next_attempt_at > now()"
                     + " FROM " + settings.qualifiedTable() + " d JOIN " + settings.qualifiedTable() + " e"
                     + " ON e.aggregate_type = d.aggregate_type AND e.aggregate_id = d.aggregate_id AND e.seq < d.seq"
                     + " WHERE d.event_id IN (" + list + ") AND " + holds + " AND e.event_id NOT IN (" + list + ")"
                     + " ORDER BY d.seq LIMIT 1")) {
            if (rs.next()) {
                return "delivered seq " + rs.getLong(1) + " of " + rs.getString(2) + " while seq " + rs.getLong(3)
                        + " was " + rs.getString(4) + (rs.getBoolean(5) ? " (in backoff)" : "") + " outside the batch";
            }
        }
        return null;
    }
}
