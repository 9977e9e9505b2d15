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
            series.put("SQL ceiling (no-op publish)", new ArrayList<>());
            series.put("broker ceiling (plain producer)", new ArrayList<>());
            for (Map<String, Object> r : headline) {
                categories.add(r.get("broker") + " " + r.get("ordering"));
                series.get("relay").add(num(r.get("relayRowsPerSecond")));
                series.get("SQL ceiling (no-op publish)").add(num(r.get("sqlCeilingRowsPerSecond")));
                series.get("broker ceiling (plain producer)").add(num(r.get("brokerCeilingRowsPerSecond")));
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
                series.computeIfAbsent(r.get("broker") + " relay ÷ min(ceilings), %", k -> new ArrayList<>())
                        .add(num(r.get("ratio")) * 100);
            }
            charts.put("drain-matrix.svg", Charts.bars("Drain matrix, " + matrix.get(0).get("rows") + " rows: relay as % of min(SQL, broker) ceiling",
                    "% of ceiling", categories, series));
        }
        List<Map<String, Object>> modes = list("latency");
        if (!modes.isEmpty()) {
            List<String> categories = new ArrayList<>();
            LinkedHashMap<String, List<Double>> series = new LinkedHashMap<>();
            series.put("p50", new ArrayList<>());
            series.put("p99", new ArrayList<>());
            series.put("p99.9", new ArrayList<>());
            for (Map<String, Object> mode : modes) {
                for (Object o : (List<?>) mode.get("steady")) {
                    Map<String, Object> s = map(o);
                    categories.add(modeName(mode) + " " + s.get("targetPerSecond") + "/s");
                    series.get("p50").add(num(s.get("p50Ms")));
                    series.get("p99").add(num(s.get("p99Ms")));
                    series.get("p99.9").add(num(s.get("p999Ms")));
                }
            }
            charts.put("latency.svg", Charts.bars("Commit to consume latency (RabbitMQ consumer)", "ms", categories, series));
        }
        List<Map<String, Object>> scale = list("scaleOut");
        if (!scale.isEmpty()) {
            List<String> categories = new ArrayList<>();
            LinkedHashMap<String, List<Double>> series = new LinkedHashMap<>();
            series.put("total rows/s", new ArrayList<>());
            for (Map<String, Object> s : scale) {
                categories.add(s.get("processes") + " process(es)");
                series.get("total rows/s").add(num(s.get("rowsPerSecond")));
            }
            charts.put("scale-out.svg", Charts.bars("Scale-out, " + scale.get(0).get("rows") + " rows to RabbitMQ", "rows/s", categories, series));
        }
        return charts;
    }

    String markdown(String chartsLink) {
        StringBuilder md = new StringBuilder();
        md.append("### Run of ").append(results.get("date")).append(" (").append(results.get("suite")).append(" suite, ")
                .append(results.get("elapsedSeconds")).append(" s)\n\n");
        md.append("| machine | |\n| --- | --- |\n");
        map(results.get("machine")).forEach((k, v) -> md.append("| ").append(k).append(" | ").append(v).append(" |\n"));
        md.append("\n<details><summary>Settings</summary>\n\n| setting | |\n| --- | --- |\n");
        map(results.get("settings")).forEach((k, v) -> md.append("| ").append(k).append(" | ").append(v).append(" |\n"));
        md.append("\n</details>\n\n");
        List<Map<String, Object>> drains = list("drain");
        if (!drains.isEmpty()) {
            md.append("#### Drain\n\nrelay ÷ min(SQL ceiling, broker ceiling); the ceilings are measured in the same run.\n\n");
            md.append("| tier | broker | ordering | workers | batch | rows | relay rows/s | SQL ceiling | broker ceiling | ratio |\n");
            md.append("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
            for (Map<String, Object> r : drains) {
                md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.0f %% |%n", r.get("tier"),
                        r.get("broker"), r.get("ordering"), r.get("workers"), r.get("batch"), r.get("rows"),
                        r.get("relayRowsPerSecond"), r.get("sqlCeilingRowsPerSecond"), r.get("brokerCeilingRowsPerSecond"),
                        num(r.get("ratio")) * 100));
            }
            chart(md, chartsLink, "drain-headline.svg", "Drain headline");
            if (drains.stream().anyMatch(r -> "matrix".equals(r.get("tier")))) {
                chart(md, chartsLink, "drain-matrix.svg", "Drain matrix");
            }
            md.append('\n');
        }
        List<Map<String, Object>> modes = list("latency");
        if (!modes.isEmpty()) {
            md.append("#### Idle cost\n\n| mode | wake interval | relay statements/s | per wake interval | database transactions/s |\n");
            md.append("| --- | ---: | ---: | ---: | ---: |\n");
            for (Map<String, Object> mode : modes) {
                Map<String, Object> idle = map(mode.get("idle"));
                md.append(String.format(Locale.ROOT, "| %s | %s ms | %s | %s | %s |%n", mode.get("mode"), mode.get("wakeIntervalMs"),
                        idle.get("relayStatementsPerSecond"), idle.get("relayStatementsPerWakeInterval"),
                        idle.get("databaseTransactionsPerSecond")));
            }
            md.append("\n#### Steady rate: commit to consume\n\n| mode | target/s | achieved/s | events | p50 ms | p99 ms | p99.9 ms | max ms | not consumed |\n");
            md.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
            for (Map<String, Object> mode : modes) {
                for (Object o : (List<?>) mode.get("steady")) {
                    Map<String, Object> s = map(o);
                    md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |%n", modeName(mode),
                            s.get("targetPerSecond"), s.get("achievedPerSecond"), s.get("events"), s.get("p50Ms"), s.get("p99Ms"),
                            s.get("p999Ms"), s.get("maxMs"), s.get("notConsumedWithin10s")));
                }
            }
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
        if (!scale.isEmpty()) {
            md.append("#### Scale-out\n\n| processes | rows | total rows/s | distinct consumed | duplicates | delivered per process |\n");
            md.append("| ---: | ---: | ---: | ---: | ---: | --- |\n");
            for (Map<String, Object> s : scale) {
                md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s |%n", s.get("processes"), s.get("rows"),
                        s.get("rowsPerSecond"), s.get("distinctConsumed"), s.get("duplicates"), s.get("deliveredPerProcess")));
            }
            chart(md, chartsLink, "scale-out.svg", "Scale-out");
            md.append('\n');
        }
        return md.toString();
    }

    private static String modeName(Map<String, Object> mode) {
        return "capture".equals(mode.get("mode")) ? "capture" : "polling " + mode.get("wakeIntervalMs") + " ms";
    }

    private static void chart(StringBuilder md, String link, String file, String alt) {
        if (link != null) {
            md.append("\n![").append(alt).append("](").append(link).append('/').append(file).append(")\n");
        }
    }

    private static double num(Object value) {
        return value == null ? 0 : ((Number) value).doubleValue();
    }
}
