package io.queuebox.bench;

import io.queuebox.domain.DeliverySettings;
import io.queuebox.jdbc.OutboxDatabase;
import io.queuebox.ports.MessagePublisher;
import java.io.PrintStream;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Workload 1: a pending backlog drained as fast as the relay goes, next to the pure-SQL floor of the same
 * configuration and the broker's own ceiling. Each drain checks, outside the timed part, that the relay delivered
 * every row, with no failure, that no row is left unsent, and that the broker took in at least as many messages
 * (queue depth or end offsets before and after): the first three stop the bench at once, the last is recorded in
 * {@link #shortfalls()} and fails it after the results are written.
 */
final class Drain {

    private final BenchDatabase db;
    private final Brokers brokers;
    private final Floor floor;
    private final PrintStream out;
    /** Drains whose broker took in fewer messages than rows were marked sent; the bench fails if any. */
    private final List<String> shortfalls = new java.util.concurrent.CopyOnWriteArrayList<>();

    Drain(BenchDatabase db, Brokers brokers, Floor floor, PrintStream out) {
        this.db = db;
        this.brokers = brokers;
        this.floor = floor;
        this.out = out;
    }

    /**
     * The relay draining {@code rows} to {@code broker} ({@code none} for a publisher that acks at once: the relay's
     * own cost, SQL included); with {@code deleteOnSend} the store deletes sent rows instead of marking them.
     */
    Run relay(String broker, boolean ordered, int workers, int batch, int rows, int aggregates, boolean deleteOnSend)
            throws Exception {
        return relay(broker, ordered, workers, batch, rows, aggregates, deleteOnSend ? db.deletingOutbox : db.outbox,
                deleteOnSend, DeliverySettings.DEFAULT_PIPELINE_DEPTH);
    }

    /**
     * The same with pipelined workers ({@code outbox.pipelineDepth = 2}: a worker claims its next batch while its
     * publish stage publishes the last and records its outcome).
     */
    Run pipelinedRelay(String broker, boolean ordered, int workers, int batch, int rows, int aggregates, boolean leasing)
            throws Exception {
        return relay(broker, ordered, workers, batch, rows, aggregates, leasing ? db.leasingOutbox : db.outbox, false,
                PIPELINED);
    }

    /** The pipeline depth the bench compares with the default. */
    static final int PIPELINED = 2;

    /** The same, with claims that write a lease on every row ({@code outbox.holdRowLocks: false}). */
    Run leasingRelay(String broker, boolean ordered, int workers, int batch, int rows, int aggregates) throws Exception {
        return relay(broker, ordered, workers, batch, rows, aggregates, db.leasingOutbox, false,
                DeliverySettings.DEFAULT_PIPELINE_DEPTH);
    }

    private Run relay(String broker, boolean ordered, int workers, int batch, int rows, int aggregates,
                      OutboxDatabase outbox, boolean deleteOnSend, int pipelineDepth) throws Exception {
        db.reset();
        db.fill(rows, aggregates);
        MessagePublisher publisher = broker.equals("none") ? Relay.NO_OP : brokers.relayPublisher(broker);
        try {
            long heldBefore = broker.equals("none") ? 0 : brokers.held(broker);
            Relay relay = new Relay(outbox.store(), publisher,
                    Relay.settings(ordered, workers, batch, Duration.ofMillis(100), pipelineDepth), List.of());
            Cpu cpu = Cpu.start();
            long start = System.nanoTime();
            relay.start();
            boolean done;
            try {
                done = relay.awaitDelivered(rows, Duration.ofSeconds(Math.max(120, rows / 300)));
            } finally {
                relay.close();
            }
            double seconds = Brokers.seconds(start);
            Run measured = Run.of(rows, seconds, cpu, null);
            if (!done) {
                throw new IllegalStateException("drain to " + broker + " delivered " + relay.delivered.get() + " of "
                        + rows + " rows in time; last error: " + relay.lastError.get());
            }
            if (relay.failures.get() > 0) {
                throw new IllegalStateException("drain to " + broker + " had " + relay.failures.get()
                        + " failures; last: " + relay.lastError.get());
            }
            long left = db.count(deleteOnSend ? "true" : "status <> 'sent'");
            if (left != 0) {
                throw new IllegalStateException(left + " rows not sent after the drain to " + broker);
            }
            String stats = String.format(Locale.ROOT, "claims %d (empty %d), mean claim %.1f ms, mean publish %.1f ms",
                    relay.claims.get(), relay.emptyClaims.get(), relay.claimNanos.get() / 1e6 / Math.max(1, relay.claims.get()),
                    relay.publishNanos.get() / 1e6 / Math.max(1, relay.claims.get() - relay.emptyClaims.get()));
            if (!broker.equals("none")) {
                // Every row is marked sent; the broker must also hold at least as many messages (more: a redelivery).
                long received = brokers.held(broker) - heldBefore;
                stats += ", broker received " + received;
                if (received < rows) {
                    String shortfall = String.format(Locale.ROOT, "drain to %s (ordered %s, workers %d, batch %d, pipelineDepth %d%s):"
                                    + " %d rows marked sent but the broker received %d", broker, ordered, workers, batch,
                            pipelineDepth, deleteOnSend ? ", deleteOnSend" : "", rows, received);
                    shortfalls.add(shortfall);
                    out.println("      " + shortfall);
                }
            }
            return measured.withDetail(stats);
        } finally {
            if (publisher != Relay.NO_OP) {
                publisher.close();
            }
            if (broker.equals("rabbitmq")) {
                brokers.purgeQueue();
            }
        }
    }

    /** The drains so far whose broker received fewer messages than rows were sent (see the class comment). */
    List<String> shortfalls() {
        return List.copyOf(shortfalls);
    }

    Run brokerCeiling(String broker, int rows, int aggregates) throws Exception {
        return broker.equals("kafka") ? brokers.kafkaCeiling(rows, aggregates) : brokers.rabbitCeiling(rows, aggregates);
    }

    /**
     * One cell: the pure-SQL floor of the configuration (as many loops as workers, the same batch and rows; marking
     * by UPDATE, or by DELETE for a {@code deleteOnSend} relay), the relay with a no-op publisher, then the relay
     * to each broker. The broker ceilings are passed in (measured once per broker and row count).
     */
    void cell(List<Map<String, Object>> results, List<String> brokerNames, Map<String, Run> brokerCeilings,
              boolean ordered, int workers, int batch, int rows, int aggregates, String tier, boolean deleteOnSend)
            throws Exception {
        Floor.Marking marking = deleteOnSend ? Floor.Marking.DELETE : Floor.Marking.UPDATE;
        Run sql = floor.run(marking, workers, batch, rows, aggregates);
        Run noOp = relay("none", ordered, workers, batch, rows, aggregates, deleteOnSend);
        for (String broker : brokerNames) {
            Run run = relay(broker, ordered, workers, batch, rows, aggregates, deleteOnSend);
            Run brokerAlone = brokerCeilings.get(broker);
            double ceiling = Math.min(sql.rowsPerSecond(), brokerAlone.rowsPerSecond());
            CoRunBound bound = CoRunBound.of(sql, brokerAlone);
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("tier", tier);
            row.put("broker", broker);
            row.put("ordering", ordered ? "per-aggregate" : "none");
            row.put("deleteOnSend", deleteOnSend);
            row.put("workers", workers);
            row.put("batch", batch);
            row.put("rows", rows);
            row.put("relayRowsPerSecond", Math.round(run.rowsPerSecond()));
            row.put("relayCpuMsPer1000", run.cpuMsPerThousand());
            row.put("relayCpuAboveIdleMsPer1000", run.cpuAboveIdleMsPerThousand());
            row.put("relayNoOpRowsPerSecond", Math.round(noOp.rowsPerSecond()));
            row.put("sqlFloorMarking", marking.name());
            row.put("sqlFloorRowsPerSecond", Math.round(sql.rowsPerSecond()));
            row.put("sqlFloorCpuMsPer1000", sql.cpuMsPerThousand());
            row.put("sqlFloorCpuAboveIdleMsPer1000", sql.cpuAboveIdleMsPerThousand());
            row.put("sqlFloorMachineCpuAboveIdleMsPer1000", sql.machineCpuAboveIdleMsPerThousand());
            row.put("brokerCeilingRowsPerSecond", Math.round(brokerAlone.rowsPerSecond()));
            row.put("brokerCeilingMachineCpuAboveIdleMsPer1000", brokerAlone.machineCpuAboveIdleMsPerThousand());
            row.put("relayMachineCpuAboveIdleMsPer1000", run.machineCpuAboveIdleMsPerThousand());
            row.put("coRunBoundRowsPerSecond", bound == null ? null : Math.round(bound.rowsPerSecond()));
            row.put("ratioToFloor", Stats.ratio(run.rowsPerSecond(), sql.rowsPerSecond()));
            row.put("ratio", Stats.ratio(run.rowsPerSecond(), ceiling));
            row.put("ratioToCoRunBound", bound == null ? null : Stats.ratio(run.rowsPerSecond(), bound.rowsPerSecond()));
            row.put("relayStats", run.detail());
            results.add(row);
            out.printf(Locale.ROOT, "  drain %-8s ordering=%-13s%s workers=%d batch=%4d rows=%7d: relay %8.0f/s (no-op %8.0f/s)"
                            + "  floor(%s) %8.0f/s  broker %8.0f/s  co-run bound %s/s  ÷floor %5.1f %%  ÷min %5.1f %%  ÷bound %s"
                            + "  cpu %s ms/1000 (%s above idle), machine %s (floor %s, broker %s)%n",
                    broker, row.get("ordering"), deleteOnSend ? " deleteOnSend" : "", workers, batch, rows, run.rowsPerSecond(),
                    noOp.rowsPerSecond(), marking, sql.rowsPerSecond(), brokerAlone.rowsPerSecond(), row.get("coRunBoundRowsPerSecond"),
                    run.rowsPerSecond() / sql.rowsPerSecond() * 100, run.rowsPerSecond() / ceiling * 100,
                    bound == null ? "–" : String.format(Locale.ROOT, "%5.1f %%", run.rowsPerSecond() / bound.rowsPerSecond() * 100),
                    run.cpuMsPerThousand(), run.cpuAboveIdleMsPerThousand(), run.machineCpuAboveIdleMsPerThousand(),
                    sql.machineCpuAboveIdleMsPerThousand(), brokerAlone.machineCpuAboveIdleMsPerThousand());
            out.println("      " + run.detail());
        }
    }
}
