package io.queuebox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.postgres.PostgresOutbox;
import io.queuebox.postgres.PostgresOutboxSettings;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A relay's store after a quiet spell: its connection claims a trickle of events one at a time on an outbox that was
 * emptied and vacuumed (its usual state), then a backlog arrives and the same connection drains it with ordered held
 * claims of 500 rows, each marked sent. What it measures is the cost of the plans the connection kept from the quiet
 * spell (docs/performance.md, "Claims planned on an empty outbox"); no broker is involved. The drain stops after
 * {@code maxSeconds}, so a store whose claims read the whole table cannot hold the bench up for long.
 */
final class QuietThenBurst {

    private static final String SCHEMA = "bench_quiet";
    private static final int TRICKLE = 15;
    private static final int BATCH = 500;

    private final BenchDatabase db;
    private final PrintStream out;

    QuietThenBurst(BenchDatabase db, PrintStream out) {
        this.db = db;
        this.out = out;
    }

    Map<String, Object> run(int backlogRows, int aggregates, int maxSeconds) throws Exception {
        db.execute("DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE");
        PostgresOutboxSettings settings = PostgresOutboxSettings.builder().schema(SCHEMA).build();
        String table = SCHEMA + "." + settings.table();
        try (HikariDataSource pool = db.newPool("quiet", 1)) {
            PostgresOutbox.createSchema(pool, settings);
            // No autoanalyze may replan in the middle: what the run measures is the plans the quiet spell left.
            db.execute("ALTER TABLE " + table + " SET (autovacuum_enabled = false)");
            db.execute("INSERT INTO " + table + " (event_id, aggregate_type, aggregate_id, event_type, payload)"
                    + " VALUES (gen_random_uuid(), 'order', 'seed', 'created', '\\x7b7d')");
            db.execute("DELETE FROM " + table);
            db.execute("VACUUM (ANALYZE) " + table);
            OutboxStore store = PostgresOutbox.store(pool, settings);
            ClaimRequest request = new ClaimRequest("bench-quiet", BATCH, Duration.ofSeconds(60), Ordering.PER_AGGREGATE,
                    ParkingPolicy.HOLD_AGGREGATE);
            for (int i = 0; i < TRICKLE; i++) {
                db.execute("INSERT INTO " + table + " (event_id, aggregate_type, aggregate_id, event_type, payload)"
                        + " VALUES (gen_random_uuid(), 'order', 'trickle-" + i + "', 'created', '\\x7b7d')");
                ClaimBatch batch = store.claim(request);
                store.markSent(batch.lease(), batch.deliveries().stream().map(ClaimedDelivery::eventId).toList());
                store.claim(request);
                store.timeUntilNextDue();
                store.purgeSent(Duration.ZERO, 100);
            }
            for (int from = 1; from <= backlogRows; from += 5_000) {
                db.execute("INSERT INTO " + table + " (event_id, aggregate_type, aggregate_id, event_type, payload)"
                        + " SELECT gen_random_uuid(), 'order', 'agg-' || (g % " + aggregates + "), 'created',"
                        + " decode(repeat('ab', 100), 'hex') FROM generate_series(" + from + ", "
                        + Math.min(backlogRows, from + 4_999) + ") g");
            }
            List<Double> claimMillis = new ArrayList<>();
            long drained = 0;
            long started = System.nanoTime();
            long until = started + Duration.ofSeconds(maxSeconds).toNanos();
            while (drained < backlogRows && System.nanoTime() < until) {
                long claimStarted = System.nanoTime();
                ClaimBatch batch = store.claim(request);
                claimMillis.add((System.nanoTime() - claimStarted) / 1e6);
                drained += store.markSent(batch.lease(),
                        batch.deliveries().stream().map(ClaimedDelivery::eventId).toList());
            }
            double seconds = (System.nanoTime() - started) / 1e9;
            Map<String, Object> result = new LinkedHashMap<>();
            result.put("trickle", TRICKLE);
            result.put("backlogRows", backlogRows);
            result.put("aggregates", aggregates);
            result.put("batch", BATCH);
            result.put("maxSeconds", maxSeconds);
            result.put("drained", drained);
            result.put("seconds", Stats.round(seconds, 2));
            result.put("rowsPerSecond", Stats.round(drained / seconds, 0));
            result.put("claims", claimMillis.size());
            result.put("firstClaimMillis", Stats.round(claimMillis.get(0), 1));
            result.put("medianClaimMillis", Stats.round(Stats.median(claimMillis), 1));
            out.printf(Locale.ROOT, "  %d of %d rows drained in %.1f s (%.0f rows/s); %d claims of %d, first %.1f ms,"
                            + " median %.1f ms%n", drained, backlogRows, seconds, drained / seconds, claimMillis.size(), BATCH,
                    claimMillis.get(0), Stats.median(claimMillis));
            return result;
        } finally {
            db.execute("DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE");
        }
    }
}
