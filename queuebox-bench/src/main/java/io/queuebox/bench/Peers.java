package io.queuebox.bench;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * The drain side by side: the pure-SQL floor, QueueBox and gruelbox transaction-outbox draining the same number
 * of pending rows (batch 500, the same aggregates and payload), in interleaved repetitions (every contestant once,
 * in a fixed order, then again), medians reported. Two groups: one loop / one relay worker / one gruelbox thread,
 * and two loops / two relay workers / eight gruelbox threads (the machine's cores, and gruelbox's usual pool).
 * QueueBox runs without ordering here (neither the floor nor gruelbox 4.x orders anything), except in two rows of
 * the second group that show what per-aggregate ordering costs; QueueBox's claims hold row locks for the batch (the
 * PostgreSQL default), and rows marked leased write a lease on each row instead; rows marked pipelined run outbox.pipelineDepth 2 (the default
 * is the serial loop). Each row's ratio is to
 * the floor of its group that marks as it does (UPDATE, or DELETE for QueueBox with deleteOnSend and for
 * gruelbox, which deletes a processed entry).
 */
final class Peers {

    /** {@code broker}: the broker a QueueBox row publishes to, whose run alone bounds it with the floor; or null. */
    private record Contestant(String group, String name, Floor.Marking reference, String broker, Callable<Run> run) {

        Contestant(String group, String name, Floor.Marking reference, Callable<Run> run) {
            this(group, name, reference, brokerNamed(name), run);
        }

        private static String brokerNamed(String name) {
            return !name.startsWith("QueueBox → ") ? null : name.substring("QueueBox → ".length()).split(",")[0];
        }
    }

    private final Drain drain;
    private final Floor floor;
    private final Gruelbox gruelbox;
    private final PrintStream out;

    Peers(Drain drain, Floor floor, Gruelbox gruelbox, PrintStream out) {
        this.drain = drain;
        this.floor = floor;
        this.gruelbox = gruelbox;
        this.out = out;
    }

    static final String FLOOR_UPDATE = "SQL floor, UPDATE";
    static final String FLOOR_DELETE = "SQL floor, DELETE";

    Map<String, Object> drain(int rows, int aggregates, int reps, String broker, boolean withBrokerPeers,
                              boolean rabbitMq) throws Exception {
        int batch = 500;
        List<Contestant> contestants = new ArrayList<>();
        for (int loops : new int[] {1, 2}) {
            int gruelboxThreads = loops == 1 ? 1 : 8;
            String group = loops == 1 ? "1 loop / 1 worker / 1 thread" : "2 loops / 2 workers / 8 threads";
            contestants.add(new Contestant(group, FLOOR_UPDATE, null,
                    () -> floor.run(Floor.Marking.UPDATE, loops, batch, rows, aggregates)));
            contestants.add(new Contestant(group, FLOOR_DELETE, null,
                    () -> floor.run(Floor.Marking.DELETE, loops, batch, rows, aggregates)));
            // The broker alone, for the co-run bound of the rows that publish to it (see CoRunBound).
            contestants.add(new Contestant(group, alone(broker), null, null,
                    () -> drain.brokerCeiling(broker, rows, aggregates)));
            if (loops == 2 && !broker.equals("rabbitmq") && rabbitMq) {
                contestants.add(new Contestant(group, alone("rabbitmq"), null, null,
                        () -> drain.brokerCeiling("rabbitmq", rows, aggregates)));
            }
            contestants.add(new Contestant(group, "QueueBox, no-op publisher", Floor.Marking.UPDATE,
                    () -> drain.relay("none", false, loops, batch, rows, aggregates, false)));
            contestants.add(new Contestant(group, "QueueBox → " + broker, Floor.Marking.UPDATE,
                    () -> drain.relay(broker, false, loops, batch, rows, aggregates, false)));
            // Claims that write a lease on each row (outbox.holdRowLocks: false) instead of holding row locks.
            contestants.add(new Contestant(group, "QueueBox, no-op publisher, leased", Floor.Marking.UPDATE,
                    () -> drain.leasingRelay("none", false, loops, batch, rows, aggregates)));
            contestants.add(new Contestant(group, "QueueBox → " + broker + ", leased", Floor.Marking.UPDATE,
                    () -> drain.leasingRelay(broker, false, loops, batch, rows, aggregates)));
            // Pipelined workers (outbox.pipelineDepth 2: the next claim overlaps the publish of the last batch)
            // beside the default serial loop.
            contestants.add(new Contestant(group, "QueueBox → " + broker + ", pipelined", Floor.Marking.UPDATE,
                    () -> drain.pipelinedRelay(broker, false, loops, batch, rows, aggregates, false)));
            contestants.add(new Contestant(group, "QueueBox → " + broker + ", leased, pipelined", Floor.Marking.UPDATE,
                    () -> drain.pipelinedRelay(broker, false, loops, batch, rows, aggregates, true)));
            if (loops == 2) {
                if (!broker.equals("rabbitmq") && rabbitMq) {
                    // Confirms make RabbitMQ the broker whose waits a pipeline would hide most.
                    contestants.add(new Contestant(group, "QueueBox → rabbitmq", Floor.Marking.UPDATE,
                            () -> drain.relay("rabbitmq", false, loops, batch, rows, aggregates, false)));
                    contestants.add(new Contestant(group, "QueueBox → rabbitmq, pipelined", Floor.Marking.UPDATE,
                            () -> drain.pipelinedRelay("rabbitmq", false, loops, batch, rows, aggregates, false)));
                }
                contestants.add(new Contestant(group, "QueueBox → " + broker + ", per-aggregate, pipelined", Floor.Marking.UPDATE,
                        () -> drain.pipelinedRelay(broker, true, loops, batch, rows, aggregates, false)));
                contestants.add(new Contestant(group, "QueueBox → " + broker + ", per-aggregate", Floor.Marking.UPDATE,
                        () -> drain.relay(broker, true, loops, batch, rows, aggregates, false)));
                contestants.add(new Contestant(group, "QueueBox → " + broker + ", per-aggregate, leased",
                        Floor.Marking.UPDATE, () -> drain.leasingRelay(broker, true, loops, batch, rows, aggregates)));
                contestants.add(new Contestant(group, "QueueBox → " + broker + ", deleteOnSend", Floor.Marking.DELETE,
                        () -> drain.relay(broker, false, loops, batch, rows, aggregates, true)));
            }
            contestants.add(new Contestant(group, "gruelbox, no-op method (" + gruelboxThreads + " thread" + (gruelboxThreads > 1 ? "s" : "") + ")",
                    Floor.Marking.DELETE, () -> gruelbox.drain("none", gruelboxThreads, batch, rows, aggregates)));
            if (withBrokerPeers && loops == 2) {
                contestants.add(new Contestant(group, "gruelbox → " + broker + ", sync ack per entry (" + gruelboxThreads + " threads)",
                        Floor.Marking.DELETE, () -> gruelbox.drain(broker, gruelboxThreads, batch, rows, aggregates)));
            }
        }
        Map<String, List<Run>> runs = new LinkedHashMap<>();
        for (int rep = 1; rep <= reps; rep++) {
            for (Contestant c : contestants) {
                Run run = c.run().call();
                runs.computeIfAbsent(key(c.group(), c.name()), k -> new ArrayList<>()).add(run);
                out.printf(Locale.ROOT, "  rep %d  %-32s %-52s %8.0f rows/s  cpu %s ms/1000 (%s above idle)%n", rep, c.group(), c.name(),
                        run.rowsPerSecond(), run.cpuMsPerThousand(), run.cpuAboveIdleMsPerThousand());
            }
        }
        List<Map<String, Object>> table = new ArrayList<>();
        for (Contestant c : contestants) {
            List<Run> mine = runs.get(key(c.group(), c.name()));
            Double median = Stats.median(mine.stream().map(Run::rowsPerSecond).toList());
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("group", c.group());
            row.put("system", c.name());
            row.put("rows", rows);
            row.put("medianRowsPerSecond", median == null ? null : Math.round(median));
            row.put("medianCpuMsPer1000", Stats.median(mine.stream().map(Run::cpuMsPerThousand).toList()));
            row.put("medianCpuAboveIdleMsPer1000", Stats.median(mine.stream().map(Run::cpuAboveIdleMsPerThousand).toList()));
            row.put("medianMachineCpuAboveIdleMsPer1000",
                    Stats.median(mine.stream().map(Run::machineCpuAboveIdleMsPerThousand).toList()));
            if (c.reference() != null) {
                String reference = c.reference() == Floor.Marking.UPDATE ? FLOOR_UPDATE : FLOOR_DELETE;
                List<Run> floorRuns = runs.get(key(c.group(), reference));
                row.put("ratioTo", reference);
                row.put("ratio", Stats.ratio(median, Stats.median(floorRuns.stream().map(Run::rowsPerSecond).toList())));
                List<Run> aloneRuns = c.broker() == null ? null : runs.get(key(c.group(), alone(c.broker())));
                CoRunBound bound = aloneRuns == null ? null : CoRunBound.of(medianRun(floorRuns), medianRun(aloneRuns));
                if (bound != null) {
                    row.put("coRunBoundRowsPerSecond", Math.round(bound.rowsPerSecond()));
                    row.put("ratioToCoRunBound", Stats.ratio(median, bound.rowsPerSecond()));
                }
            }
            row.put("reps", mine.stream().map(Run::toMap).toList());
            table.add(row);
        }
        out.println("  medians over " + reps + " repetition(s):");
        for (Map<String, Object> row : table) {
            out.printf(Locale.ROOT, "    %-32s %-52s %8s rows/s  cpu %6s ms/1000 (%6s above idle)%s%n", row.get("group"), row.get("system"),
                    row.get("medianRowsPerSecond"), row.get("medianCpuMsPer1000"), row.get("medianCpuAboveIdleMsPer1000"),
                    (row.get("ratio") == null ? "" : String.format(Locale.ROOT, "  %5.1f %% of %s",
                            ((Number) row.get("ratio")).doubleValue() * 100, row.get("ratioTo")))
                            + (row.get("ratioToCoRunBound") == null ? "" : String.format(Locale.ROOT, ", %5.1f %% of the co-run bound %s/s",
                            ((Number) row.get("ratioToCoRunBound")).doubleValue() * 100, row.get("coRunBoundRowsPerSecond"))));
        }
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("rows", rows);
        result.put("batch", batch);
        result.put("aggregates", aggregates);
        result.put("reps", reps);
        result.put("broker", broker);
        result.put("order", contestants.stream().map(c -> c.group() + ": " + c.name()).toList());
        result.put("table", table);
        return result;
    }

    private static String alone(String broker) {
        return broker.equals("kafka") ? "Kafka producer alone" : "RabbitMQ publisher alone (confirms)";
    }

    /** The medians of the runs' rate and machine CPU, as one run. */
    private static Run medianRun(List<Run> runs) {
        Double rate = Stats.median(runs.stream().map(Run::rowsPerSecond).toList());
        return new Run(rate == null ? 0 : rate, null, null,
                Stats.median(runs.stream().map(Run::machineCpuAboveIdleMsPerThousand).toList()), null);
    }

    private static String key(String group, String name) {
        return group + "|" + name;
    }

    /**
     * The latency side by side: per system and rate, the medians over the repetitions of p50, p99, p99.9 and CPU
     * per 1,000 events, and the sums of the events, of those not seen within 10 s, seen late and never seen. {@code modes} holds one entry per system and repetition, each with its {@code steady} rows
     * (and Debezium's {@code steadyConsumed}).
     */
    static List<Map<String, Object>> latencyMedians(List<Map<String, Object>> modes) {
        Map<String, List<Map<String, Object>>> bySystemAndRate = new LinkedHashMap<>();
        for (Map<String, Object> mode : modes) {
            addRows(bySystemAndRate, (String) mode.get("system"), mode.get("steady"), mode.get("mode"));
            if (mode.get("steadyConsumed") != null) {
                addRows(bySystemAndRate, mode.get("system") + " + RabbitMQ (confirm, consume)", mode.get("steadyConsumed"), mode.get("mode"));
            }
        }
        List<Map<String, Object>> table = new ArrayList<>();
        for (Map.Entry<String, List<Map<String, Object>>> entry : bySystemAndRate.entrySet()) {
            List<Map<String, Object>> reps = entry.getValue();
            String[] parts = entry.getKey().split("\\|", 3);
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("system", parts[0]);
            row.put("endPoint", endPoint(parts[2], parts[0]));
            row.put("targetPerSecond", Integer.parseInt(parts[1]));
            row.put("reps", reps.size());
            row.put("events", Stats.sum(Stats.column(reps, "events")));
            row.put("notSeen", Stats.sum(Stats.column(reps, "notConsumedWithin10s")));
            // Of those, how many arrived after the 10 s window and how many never did (null in results from before
            // the bench waited longer).
            row.put("seenLate", sumOrNull(Stats.column(reps, "seenLate")));
            row.put("neverSeen", sumOrNull(Stats.column(reps, "neverSeen")));
            row.put("p50Ms", Stats.median(Stats.column(reps, "p50Ms")));
            row.put("p99Ms", Stats.median(Stats.column(reps, "p99Ms")));
            row.put("p999Ms", Stats.median(Stats.column(reps, "p999Ms")));
            row.put("cpuMsPer1000", Stats.median(Stats.column(reps, "cpuMsPer1000")));
            row.put("cpuAboveIdleMsPer1000", Stats.median(Stats.column(reps, "cpuAboveIdleMsPer1000")));
            table.add(row);
        }
        return table;
    }

    /** Where a cell's latency ends: the peers that publish nothing end where their floor does. */
    private static String endPoint(String mode, String system) {
        if (mode.equals("debezium") && !system.contains("RabbitMQ")) {
            return "change event received";
        }
        return mode.equals("notify-alone") ? "notification received" : "consumed from RabbitMQ";
    }

    private static Long sumOrNull(List<Number> values) {
        return values.stream().allMatch(java.util.Objects::isNull) ? null : Stats.sum(values);
    }

    @SuppressWarnings("unchecked")
    private static void addRows(Map<String, List<Map<String, Object>>> into, String system, Object rows, Object mode) {
        if (rows == null) {
            return;
        }
        for (Map<String, Object> row : (List<Map<String, Object>>) rows) {
            into.computeIfAbsent(system + "|" + row.get("targetPerSecond") + "|" + mode, k -> new ArrayList<>()).add(row);
        }
    }
}
