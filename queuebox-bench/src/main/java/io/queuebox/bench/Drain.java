package io.queuebox.bench;

import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.OutboxStore;
import java.io.PrintStream;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Workload 1: a pending backlog drained as fast as the relay goes, next to its two ceilings. */
final class Drain {

    private final BenchDatabase db;
    private final Brokers brokers;
    private final OutboxStore store;
    private final PrintStream out;
    private String lastStats = "";

    Drain(BenchDatabase db, Brokers brokers, OutboxStore store, PrintStream out) {
        this.db = db;
        this.brokers = brokers;
        this.store = store;
        this.out = out;
    }

    /** Rows per second the relay delivers to {@code broker} ({@code none} for the no-op publisher, ceiling a). */
    double relay(String broker, boolean ordered, int workers, int batch, int rows, int aggregates) throws Exception {
        db.reset();
        db.fill(rows, aggregates);
        MessagePublisher publisher = broker.equals("none") ? Relay.NO_OP : brokers.relayPublisher(broker);
        try {
            Relay relay = new Relay(store, publisher, Relay.settings(ordered, workers, batch, Duration.ofMillis(100)), List.of());
            long start = System.nanoTime();
            relay.start();
            boolean done;
            try {
                done = relay.awaitDelivered(rows, Duration.ofSeconds(Math.max(120, rows / 300)));
            } finally {
                relay.close();
            }
            double seconds = Brokers.seconds(start);
            if (!done) {
                throw new IllegalStateException("drain to " + broker + " delivered " + relay.delivered.get() + " of "
                        + rows + " rows in time; last error: " + relay.lastError.get());
            }
            if (relay.failures.get() > 0) {
                throw new IllegalStateException("drain to " + broker + " had " + relay.failures.get()
                        + " failures; last: " + relay.lastError.get());
            }
            long pending = db.count("status <> 'sent'");
            if (pending != 0) {
                throw new IllegalStateException(pending + " rows not sent after the drain to " + broker);
            }
            lastStats = String.format(java.util.Locale.ROOT, "claims %d (empty %d), mean claim %.1f ms, mean publish %.1f ms",
                    relay.claims.get(), relay.emptyClaims.get(), relay.claimNanos.get() / 1e6 / Math.max(1, relay.claims.get()),
                    relay.publishNanos.get() / 1e6 / Math.max(1, relay.claims.get() - relay.emptyClaims.get()));
            return rows / seconds;
        } finally {
            if (publisher != Relay.NO_OP) {
                publisher.close();
            }
            if (broker.equals("rabbitmq")) {
                brokers.purgeQueue();
            }
        }
    }

    double brokerCeiling(String broker, int rows, int aggregates) throws Exception {
        return broker.equals("kafka") ? brokers.kafkaCeiling(rows, aggregates) : brokers.rabbitCeiling(rows, aggregates);
    }

    /**
     * One cell: the SQL ceiling for the configuration, then the relay to each broker; the broker ceilings are
     * passed in (measured once per broker and row count).
     */
    void cell(List<Map<String, Object>> results, List<String> brokerNames, Map<String, Double> brokerCeilings,
              boolean ordered, int workers, int batch, int rows, int aggregates, String tier) throws Exception {
        double sql = relay("none", ordered, workers, batch, rows, aggregates);
        for (String broker : brokerNames) {
            double rate = relay(broker, ordered, workers, batch, rows, aggregates);
            double ceiling = Math.min(sql, brokerCeilings.get(broker));
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("tier", tier);
            row.put("broker", broker);
            row.put("ordering", ordered ? "per-aggregate" : "none");
            row.put("workers", workers);
            row.put("batch", batch);
            row.put("rows", rows);
            row.put("relayRowsPerSecond", Math.round(rate));
            row.put("sqlCeilingRowsPerSecond", Math.round(sql));
            row.put("brokerCeilingRowsPerSecond", Math.round(brokerCeilings.get(broker)));
            row.put("ratio", Math.round(rate / ceiling * 1000) / 1000.0);
            row.put("relayStats", lastStats);
            results.add(row);
            out.printf("  drain %-8s ordering=%-13s workers=%d batch=%4d rows=%7d: relay %8.0f/s  sql %8.0f/s  broker %8.0f/s  ratio %5.1f %%%n",
                    broker, row.get("ordering"), workers, batch, rows, rate, sql, brokerCeilings.get(broker), rate / ceiling * 100);
            out.println("      " + lastStats);
        }
    }
}
