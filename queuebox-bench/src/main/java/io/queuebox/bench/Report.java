package io.queuebox.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The Markdown summary and the SVG charts of one run's results. */
final class Report {

    static final String START = "<!-- bench:results:start -->";
    static final String END = "<!-- bench:results:end -->";

    private final Map<String, Object> results;

    Report(Map<String, Object> results) {
        this.results = results;
    }

    @SuppressWarnings("unchecked")
    private List<Map<String, Object>> list(String key) {
        Object value = results.get(key);
        return value == null ? List.of() : (List<Map<String, Object>>) value;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Object value) {
        return (Map<String, Object>) value;
    }

    Map<String, String> charts() {
        Map<String, String> charts = new LinkedHashMap<>();
        List<Map<String, Object>> headline = list("drain").stream().filter(r -> "headline".equals(r.get("tier"))).toList();
        if (!headline.isEmpty()) {
            List<String> categories = new ArrayList<>();
            LinkedHashMap<String, List<Double>> series = new LinkedHashMap<>();
            series.put("relay", new ArrayList<>());
            series.put("relay, no-op publisher", new ArrayList<>());
            series.put("pure-SQL floor", new ArrayList<>());
            series.put("broker ceiling (plain producer)", new ArrayList<>());
            series.put("co-run bound (floor and broker on the same cores)", new ArrayList<>());
            for (Map<String, Object> r : headline) {
                categories.add(r.get("broker") + " " + r.get("ordering") + (Boolean.TRUE.equals(r.get("deleteOnSend")) ? " delete" : ""));
                series.get("relay").add(num(r.get("relayRowsPerSecond")));
                series.get("relay, no-op publisher").add(num(r.get("relayNoOpRowsPerSecond")));
                series.get("pure-SQL floor").add(num(r.get("sqlFloorRowsPerSecond")));
                series.get("broker ceiling (plain producer)").add(num(r.get("brokerCeilingRowsPerSecond")));
                series.get("co-run bound (floor and broker on the same cores)").add(numOrNull(r.get("coRunBoundRowsPerSecond")));
            }
            charts.put("drain-headline.svg", Charts.bars("Drain, " + headline.get(0).get("rows") + " rows, workers 2, batch "
                    + headline.get(0).get("batch"), "rows/s", categories, series));
        }
        List<Map<String, Object>> matrix = list("drain").stream().filter(r -> "matrix".equals(r.get("tier"))).toList();
        if (!matrix.isEmpty()) {
            List<String> categories = new ArrayList<>();
            LinkedHashMap<String, List<Double>> series = new LinkedHashMap<>();
            for (Map<String, Object> r : matrix) {
                String category = ("none".equals(r.get("ordering")) ? "unordered" : "ordered") + " w" + r.get("workers") + " b" + r.get("batch");
                if (!categories.contains(category)) {
                    categories.add(category);
                }
                series.computeIfAbsent(r.get("broker") + " relay ÷ min(floor, broker), %", k -> new ArrayList<>())
                        .add(num(r.get("ratio")) * 100);
            }
            charts.put("drain-matrix.svg", Charts.bars("Drain matrix, " + matrix.get(0).get("rows") + " rows: relay as % of min(SQL floor, broker ceiling)",
                    "% of ceiling", categories, series));
        }
        List<Map<String, Object>> comparison = list("latencyComparison");
        if (!comparison.isEmpty()) {
            List<String> categories = new ArrayList<>();
            LinkedHashMap<String, List<Double>> series = new LinkedHashMap<>();
            series.put("p50 (median of reps)", new ArrayList<>());
            series.put("p99 (median of reps)", new ArrayList<>());
            for (Map<String, Object> s : comparison) {
                categories.add(s.get("system") + " " + s.get("targetPerSecond") + "/s");
                series.get("p50 (median of reps)").add(numOrNull(s.get("p50Ms")));
                series.get("p99 (median of reps)").add(numOrNull(s.get("p99Ms")));
            }
            charts.put("latency.svg", Charts.bars("Commit to consume (Debezium alone: to change event too; LISTEN/NOTIFY alone: to notification)", "ms", categories, series));
        }
        List<Map<String, Object>> peers = peerTable();
        if (!peers.isEmpty()) {
            List<String> categories = new ArrayList<>();
            LinkedHashMap<String, List<Double>> series = new LinkedHashMap<>();
            series.put("rows/s (median of reps)", new ArrayList<>());
            for (Map<String, Object> r : peers) {
                categories.add((String.valueOf(r.get("group")).startsWith("1") ? "1: " : "2: ") + r.get("system"));
                series.get("rows/s (median of reps)").add(numOrNull(r.get("medianRowsPerSecond")));
            }
            charts.put("drain-peers.svg", Charts.bars("Drain side by side, " + map(results.get("peers")).get("rows") + " rows, batch 500",
                    "rows/s", categories, series));
        }
        List<Map<String, Object>> scale = list("scaleOut");
        List<Map<String, Object>> scaleMedians = list("scaleOutMedians");
        if (!scale.isEmpty()) {
            List<String> categories = new ArrayList<>();
            LinkedHashMap<String, List<Double>> series = new LinkedHashMap<>();
            boolean medians = !scaleMedians.isEmpty();
            String warmSeries = medians ? "warm: total rows/s (median of reps)" : "warm: total rows/s";
            String coldSeries = medians ? "cold (warm-up from GO): total rows/s (median of reps)" : "cold (warm-up from GO): total rows/s";
            series.put(warmSeries, new ArrayList<>());
            series.put(coldSeries, new ArrayList<>());
            for (Map<String, Object> s : medians ? scaleMedians : scale) {
                categories.add(s.get("processes") + " process(es)");
                series.get(warmSeries).add(num(s.get(medians ? "medianRowsPerSecond" : "rowsPerSecond")));
                series.get(coldSeries).add(numOrNull(s.get(medians ? "medianColdRowsPerSecond" : "coldRowsPerSecond")));
            }
            Object warmup = scale.get(0).get("warmupRows");
            charts.put("scale-out.svg", Charts.bars("Scale-out to RabbitMQ, " + scale.get(0).get("rows") + " rows"
                    + (warmup == null ? "" : " warm, " + warmup + " cold"), "rows/s", categories, series));
        }
        return charts;
    }

    @SuppressWarnings("unchecked")
    private List<Map<String, Object>> peerTable() {
        Object peers = results.get("peers");
        return peers == null ? List.of() : (List<Map<String, Object>>) map(peers).get("table");
    }

    String markdown(String chartsLink) {
        StringBuilder md = new StringBuilder();
        md.append("### Run of ").append(results.get("date")).append(" (").append(results.get("suite")).append(" suite, ")
                .append(results.get("elapsedSeconds")).append(" s)\n\n");
        if (results.get("failures") instanceof List<?> failures && !failures.isEmpty()) {
            md.append("The run failed (the bench exited non-zero):\n\n");
            failures.forEach(failure -> md.append("- ").append(failure).append('\n'));
            md.append('\n');
        }
        md.append("| machine | |\n| --- | --- |\n");
        map(results.get("machine")).forEach((k, v) -> md.append("| ").append(k).append(" | ").append(v).append(" |\n"));
        md.append("\n<details><summary>Settings</summary>\n\n| setting | |\n| --- | --- |\n");
        map(results.get("settings")).forEach((k, v) -> md.append("| ").append(k).append(" | ").append(v).append(" |\n"));
        md.append("\n</details>\n\n");
        if (results.get("postgresSettings") != null) {
            md.append("PostgreSQL settings (SHOW): ");
            List<String> pairs = new ArrayList<>();
            map(results.get("postgresSettings")).forEach((k, v) -> pairs.add("`" + k + "` " + v));
            md.append(String.join(", ", pairs)).append("\n\n");
        }
        List<Map<String, Object>> drains = list("drain");
        if (!drains.isEmpty()) {
            md.append("#### Drain\n\nrelay ÷ pure-SQL floor (same loops as workers, same batch and rows; UPDATE marking, DELETE for deleteOnSend),"
                    + " and relay ÷ min(floor, broker ceiling); all measured in the same run. CPU: JVM process ms per 1,000 rows."
                    + " Machine CPU: all cores, whoever used them (PostgreSQL, the brokers, the bench JVM), ms per 1,000 rows above"
                    + " the machine's idle rate, for the relay, the floor and the broker alone. The co-run bound is what a relay that"
                    + " does both the floor's work and the broker's can reach on these cores at best: min(floor, broker,"
                    + " cores' ms per second above idle × 1,000 ÷ (floor's + broker's machine ms per 1,000 rows)).\n\n");
            md.append("| tier | broker | ordering | deleteOnSend | workers | batch | rows | relay rows/s | relay no-op | SQL floor | broker ceiling | co-run bound | ÷ floor | ÷ min | ÷ co-run bound | CPU ms/1000 (above idle) | machine CPU ms/1000: relay / floor / broker |\n");
            md.append("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
            for (Map<String, Object> r : drains) {
                md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s (%s) | %s | %s | %s | %s | %s | %s | %s / %s / %s |%n", r.get("tier"),
                        r.get("broker"), r.get("ordering"), Boolean.TRUE.equals(r.get("deleteOnSend")) ? "yes" : "no", r.get("workers"),
                        r.get("batch"), r.get("rows"), r.get("relayRowsPerSecond"), r.get("relayNoOpRowsPerSecond"),
                        r.get("sqlFloorRowsPerSecond"), r.get("sqlFloorMarking"), r.get("brokerCeilingRowsPerSecond"),
                        orDash(r.get("coRunBoundRowsPerSecond")), percent(r.get("ratioToFloor")), percent(r.get("ratio")),
                        percent(r.get("ratioToCoRunBound")),
                        cpu(r.get("relayCpuMsPer1000"), r.get("relayCpuAboveIdleMsPer1000")),
                        orDash(r.get("relayMachineCpuAboveIdleMsPer1000")), orDash(r.get("sqlFloorMachineCpuAboveIdleMsPer1000")),
                        orDash(r.get("brokerCeilingMachineCpuAboveIdleMsPer1000"))));
            }
            chart(md, chartsLink, "drain-headline.svg", "Drain headline");
            if (drains.stream().anyMatch(r -> "matrix".equals(r.get("tier")))) {
                chart(md, chartsLink, "drain-matrix.svg", "Drain matrix");
            }
            md.append('\n');
        }
        List<Map<String, Object>> peers = peerTable();
        if (!peers.isEmpty()) {
            Map<String, Object> p = map(results.get("peers"));
            md.append("#### Drain side by side: floor, QueueBox, gruelbox\n\n").append(p.get("rows")).append(" pending rows each, batch 500, ")
                    .append(p.get("aggregates")).append(" aggregates, ").append(p.get("reps"))
                    .append(" interleaved repetition(s), medians. QueueBox without ordering (neither the floor nor gruelbox orders);"
                            + " gruelbox deletes what it processed, so its ratio is to the DELETE floor. The co-run bound of a row that publishes"
                            + " is what a relay doing its floor's work and the broker's (the broker alone, in the same group) can reach on these"
                            + " cores at best, from their machine CPU per 1,000 rows (see the drain table).\n\n");
            md.append("| group | system | rows/s | ratio to floor | ratio to co-run bound | CPU ms/1000 (above idle) | machine CPU ms/1000 above idle | each repetition, rows/s |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |\n");
            for (Map<String, Object> r : peers) {
                List<String> each = new ArrayList<>();
                for (Object o : (List<?>) r.get("reps")) {
                    each.add(String.valueOf(map(o).get("rowsPerSecond")));
                }
                md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s | %s |%n", r.get("group"), r.get("system"),
                        r.get("medianRowsPerSecond"), r.get("ratio") == null ? "–" : percent(r.get("ratio")) + " of " + r.get("ratioTo"),
                        r.get("ratioToCoRunBound") == null ? "–" : percent(r.get("ratioToCoRunBound")) + " of " + r.get("coRunBoundRowsPerSecond"),
                        cpu(r.get("medianCpuMsPer1000"), r.get("medianCpuAboveIdleMsPer1000")),
                        orDash(r.get("medianMachineCpuAboveIdleMsPer1000")), String.join(", ", each)));
            }
            chart(md, chartsLink, "drain-peers.svg", "Drain side by side");
            md.append('\n');
        }
        if (results.get("inbox") != null) {
            Map<String, Object> inbox = map(results.get("inbox"));
            md.append("#### Inbox overhead\n\n").append(inbox.get("messages")).append(" messages per run, ")
                    .append(inbox.get("threads")).append(" consumer threads, one transaction per message, ").append(inbox.get("reps"))
                    .append(" interleaved repetition(s), medians. The same business row with and without the inbox entry.\n\n");
            md.append("| consumer | messages/s | µs per message |\n| --- | ---: | ---: |\n");
            md.append(String.format(Locale.ROOT, "| plain | %s | %s |%n| inbox | %s | %s |%n%n", inbox.get("plainMessagesPerSecond"),
                    inbox.get("plainMicrosPerMessage"), inbox.get("inboxMessagesPerSecond"), inbox.get("inboxMicrosPerMessage")));
            md.append("inbox ÷ plain: ").append(inbox.get("ratio")).append("; overhead ").append(inbox.get("overheadMicrosPerMessage"))
                    .append(" µs per message.\n\n");
        }
        if (results.get("quiet") != null) {
            Map<String, Object> quiet = map(results.get("quiet"));
            md.append("#### A backlog after a quiet spell\n\n").append("One connection claims a trickle of ")
                    .append(quiet.get("trickle")).append(" events one at a time on an emptied, vacuumed outbox,")
                    .append(" then drains a backlog of ").append(quiet.get("backlogRows"))
                    .append(" rows over ").append(quiet.get("aggregates")).append(" aggregates with ordered held claims of ")
                    .append(quiet.get("batch")).append(", each marked sent (no broker; stopped after ").append(quiet.get("maxSeconds"))
                    .append(" s).\n\n| drained | seconds | rows/s | claims | first claim ms | median claim ms |\n")
                    .append("| ---: | ---: | ---: | ---: | ---: | ---: |\n");
            md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s |%n%n", quiet.get("drained"), quiet.get("seconds"),
                    quiet.get("rowsPerSecond"), quiet.get("claims"), quiet.get("firstClaimMillis"), quiet.get("medianClaimMillis")));
        }
        List<Map<String, Object>> modes = list("latency");
        if (!modes.isEmpty()) {
            md.append("#### Idle cost\n\n| mode | wake interval | relay statements/s | per wake interval | database transactions/s |\n");
            md.append("| --- | ---: | ---: | ---: | ---: |\n");
            for (Map<String, Object> mode : modes) {
                if (mode.get("idle") == null) {
                    continue;
                }
                Map<String, Object> idle = map(mode.get("idle"));
                md.append(String.format(Locale.ROOT, "| %s | %s ms | %s | %s | %s |%n", mode.get("mode"), mode.get("wakeIntervalMs"),
                        idle.get("relayStatementsPerSecond"), idle.get("relayStatementsPerWakeInterval"),
                        idle.get("databaseTransactionsPerSecond")));
            }
            List<Map<String, Object>> comparison = list("latencyComparison");
            if (!comparison.isEmpty()) {
                md.append("\n#### Latency side by side (medians over the repetitions)\n\n");
                md.append("| system | end point | target/s | p50 ms | p99 ms | p99.9 ms | CPU ms/1000 (above idle) | reps | events | not seen in 10 s | seen late / never |\n");
                md.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
                for (Map<String, Object> r : comparison) {
                    md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n", r.get("system"),
                            r.get("endPoint"), r.get("targetPerSecond"), r.get("p50Ms"), r.get("p99Ms"), r.get("p999Ms"),
                            cpu(r.get("cpuMsPer1000"), r.get("cpuAboveIdleMsPer1000")), r.get("reps"), r.get("events"), r.get("notSeen"),
                            lateNever(r.get("seenLate"), r.get("neverSeen"))));
                }
                md.append("\nPercentiles are over the events seen within " + Steady.WINDOW.toSeconds() + " s of the end of"
                        + " production; an event not seen by then is waited for up to " + Steady.EXTENDED_WAIT.toSeconds()
                        + " s more, and counted as seen late or never seen.\n");
            }
            List<String> behind = behind(modes);
            if (!behind.isEmpty()) {
                md.append("\nCells with events not seen within 10 s:\n\n");
                behind.forEach(line -> md.append("- ").append(line).append('\n'));
            }
            md.append("\n<details><summary>Steady rate, every repetition</summary>\n\n");
            md.append("| system | rep | target/s | achieved/s | events | p50 ms | p99 ms | p99.9 ms | max ms | not seen in 10 s | seen late / never | CPU ms/1000 |\n");
            md.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
            for (Map<String, Object> mode : modes) {
                for (String key : new String[] {"steady", "steadyConsumed"}) {
                    if (mode.get(key) == null) {
                        continue;
                    }
                    String system = mode.get("system") + (key.equals("steadyConsumed") ? " + RabbitMQ" : "");
                    for (Object o : (List<?>) mode.get(key)) {
                        Map<String, Object> s = map(o);
                        md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n", system,
                                mode.get("rep"), s.get("targetPerSecond"), s.get("achievedPerSecond"), s.get("events"), s.get("p50Ms"),
                                s.get("p99Ms"), s.get("p999Ms"), s.get("maxMs"), s.get("notConsumedWithin10s"),
                                lateNever(s.get("seenLate"), s.get("neverSeen")), s.get("cpuMsPer1000")));
                    }
                }
            }
            md.append("\n</details>\n");
            chart(md, chartsLink, "latency.svg", "Latency");
            md.append('\n');
        }
        if (results.get("backlog") != null) {
            Map<String, Object> b = map(results.get("backlog"));
            md.append("#### Backlog memory\n\n| rows | broker | seconds | max heap | peak heap used | peak heap after GC | RSS peak | GCs | unsent after |\n");
            md.append("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
            md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s MiB | %s MiB | %s MiB | %s MiB | %s | %s |%n%n", b.get("rows"),
                    b.get("broker"), b.get("seconds"), b.get("maxHeapMiB"), b.get("peakHeapUsedMiB"), b.get("peakHeapAfterGcMiB"),
                    b.get("rssPeakMiB"), b.get("gcCount"), b.get("unsentAfter")));
            md.append("Heap after the last GC as the drain progresses (MiB): ");
            List<String> points = new ArrayList<>();
            for (Object o : (List<?>) b.get("curve")) {
                Map<String, Object> p = map(o);
                points.add(p.get("delivered") + " → " + p.get("heapAfterLastGcMiB"));
            }
            md.append(String.join(", ", points)).append("\n\n");
        }
        List<Map<String, Object>> scale = list("scaleOut");
        List<Map<String, Object>> scaleMedians = list("scaleOutMedians");
        if (!scale.isEmpty()) {
            md.append("#### Scale-out\n\nWarm: the relays have drained the warm-up rows (as many per process as the single relay drains, so each JVM is as warm); the measured rows are committed in one"
                    + " INSERT and timed from that commit to the last of them consumed. Cold: the warm-up rows, from GO (fresh JVMs"
                    + " compiling) to the last of them consumed.\n\n");
            if (!scaleMedians.isEmpty()) {
                md.append("| processes | repetitions | warm total rows/s, median | each repetition | cold total rows/s, median"
                        + " | each repetition | claims (empty), all repetitions | duplicates |\n");
                md.append("| ---: | ---: | ---: | --- | ---: | --- | --- | ---: |\n");
                for (Map<String, Object> m : scaleMedians) {
                    md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s (%s) | %s |%n", m.get("processes"),
                            m.get("reps"), m.get("medianRowsPerSecond"), m.get("eachRowsPerSecond"), orDash(m.get("medianColdRowsPerSecond")),
                            m.get("eachColdRowsPerSecond"), m.get("claims"), m.get("emptyClaims"), m.get("duplicates")));
                }
                md.append("\nEach repetition:\n\n");
            }
            md.append("| rep | processes | rows | warm total rows/s | distinct consumed | duplicates | delivered per process"
                    + " | claims per process (empty) | relay CPU ms per process | machine busy % | warm-up rows | cold total rows/s"
                    + " | warm-up duplicates | machine busy % (cold) |\n");
            md.append("| ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |\n");
            for (Map<String, Object> s : scale) {
                md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n",
                        orDash(s.get("rep")), s.get("processes"), s.get("rows"), s.get("rowsPerSecond"), s.get("distinctConsumed"), s.get("duplicates"),
                        s.get("deliveredPerProcess"), claims(s.get("claimsPerProcess"), s.get("emptyClaimsPerProcess")),
                        orDash(s.get("cpuMillisPerProcess")), orDash(s.get("machineBusyPercent")), orDash(s.get("warmupRows")),
                        orDash(s.get("coldRowsPerSecond")), orDash(s.get("warmupDuplicates")), orDash(s.get("coldMachineBusyPercent"))));
            }
            md.append("\nMachine busy: all cores, whoever used them (PostgreSQL, RabbitMQ, the bench's consumer, the relays, anything"
                    + " else running), from /proc/stat over the phase.\n");
            chart(md, chartsLink, "scale-out.svg", "Scale-out");
            md.append('\n');
        }
        return md.toString();
    }

    /**
     * One line per repetition of a cell whose events were not all seen within 10 s: how many, how many arrived
     * later and when the last did, how many never did, and the diagnostic taken at the 10 s mark.
     */
    static List<String> behind(List<Map<String, Object>> modes) {
        List<String> lines = new ArrayList<>();
        for (Map<String, Object> mode : modes) {
            for (String key : new String[] {"steady", "steadyConsumed"}) {
                if (mode.get(key) == null) {
                    continue;
                }
                String system = mode.get("system") + (key.equals("steadyConsumed") ? " + RabbitMQ" : "");
                for (Object o : (List<?>) mode.get(key)) {
                    Map<String, Object> s = map(o);
                    if (!(s.get("notConsumedWithin10s") instanceof Number lost) || lost.longValue() == 0) {
                        continue;
                    }
                    StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "%s, rep %s, %s/s: %s of %s events not seen within 10 s",
                            system, mode.get("rep"), s.get("targetPerSecond"), lost, s.get("events")));
                    if (s.containsKey("neverSeen")) {
                        line.append("; ").append(s.get("seenLate")).append(" seen late");
                        if (s.get("lastSeenAfterEndMs") != null) {
                            line.append(" (the last ").append(s.get("lastSeenAfterEndMs")).append(" ms after the end of production)");
                        }
                        line.append(", ").append(s.get("neverSeen")).append(" never seen");
                    }
                    if (s.get("diagnosticAtWindowEnd") != null) {
                        line.append(". At 10 s: ").append(s.get("diagnosticAtWindowEnd"));
                    }
                    lines.add(line.toString());
                }
            }
        }
        return lines;
    }

    /**
     * The cells (system, repetition, rate) with events never seen, even after the extended wait: a run that has
     * any fails (see BenchCommand).
     */
    static List<String> neverSeen(List<Map<String, Object>> modes) {
        List<String> cells = new ArrayList<>();
        for (Map<String, Object> mode : modes) {
            for (String key : new String[] {"steady", "steadyConsumed"}) {
                if (mode.get(key) == null) {
                    continue;
                }
                for (Object o : (List<?>) mode.get(key)) {
                    Map<String, Object> s = map(o);
                    if (s.get("neverSeen") instanceof Number never && never.longValue() > 0) {
                        cells.add(String.format(Locale.ROOT, "%s%s, rep %s, %s/s: %s of %s events never seen", mode.get("system"),
                                key.equals("steadyConsumed") ? " + RabbitMQ" : "", mode.get("rep"), s.get("targetPerSecond"),
                                never, s.get("events")));
                    }
                }
            }
        }
        return cells;
    }

    private static String lateNever(Object late, Object never) {
        return late == null && never == null ? "–" : (late == null ? "–" : late) + " / " + (never == null ? "–" : never);
    }

    private static void chart(StringBuilder md, String link, String file, String alt) {
        if (link != null) {
            md.append("\n![").append(alt).append("](").append(link).append('/').append(file).append(")\n");
        }
    }

    private static String cpu(Object raw, Object aboveIdle) {
        return raw + " (" + (aboveIdle == null ? "–" : aboveIdle) + ")";
    }

    private static String percent(Object ratio) {
        return ratio == null ? "–" : String.format(Locale.ROOT, "%.0f %%", ((Number) ratio).doubleValue() * 100);
    }

    private static String orDash(Object value) {
        return value == null ? "–" : String.valueOf(value);
    }

    /** Claims per process with the empty ones beside each: "[120 (3), 118 (5)]". */
    private static String claims(Object claims, Object empty) {
        if (claims == null) {
            return "–";
        }
        List<?> all = (List<?>) claims;
        List<?> none = empty == null ? List.of() : (List<?>) empty;
        List<String> cells = new ArrayList<>();
        for (int i = 0; i < all.size(); i++) {
            cells.add(all.get(i) + (i < none.size() ? " (" + none.get(i) + ")" : ""));
        }
        return "[" + String.join(", ", cells) + "]";
    }

    private static Double numOrNull(Object value) {
        return value == null ? null : ((Number) value).doubleValue();
    }

    private static double num(Object value) {
        return value == null ? 0 : ((Number) value).doubleValue();
    }
}
