package io.queuebox.reliability;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The suite's report: one line per scenario, as Markdown (for docs/reliability.md) and JSON. */
final class Report {

    static final String HEADER = "| scenario | committed | rolled back | delivered | lost | phantoms | order violations"
            + " | duplicates | drain after fault (s) | run (s) | result |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |";

    private final Form form;
    private final Path dir;
    private final List<Map<String, Object>> rows = new ArrayList<>();
    private final List<String> lines = new ArrayList<>();
    private boolean holds = true;

    Report(Form form, Path dir) {
        this.form = form;
        this.dir = dir;
    }

    static Trial.Outcome crashed(String scenario, Throwable error) {
        java.io.StringWriter trace = new java.io.StringWriter();
        error.printStackTrace(new java.io.PrintWriter(trace));
        return new Trial.Outcome(new Verdict(scenario, 0, 0, 0, 0, 0, 0, 0, 0, 0), Map.of(),
                List.of("the scenario itself failed: " + trace));
    }

    void add(Trial.Outcome outcome, double seconds) {
        holds &= outcome.holds();
        Verdict v = outcome.verdict();
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("scenario", v.scenario());
        row.put("committed", v.committed());
        row.put("rolledBack", v.rolledBack());
        row.put("delivered", v.delivered());
        row.put("lost", v.lost());
        row.put("phantoms", v.phantoms());
        row.put("orderViolations", v.orderViolations());
        row.put("duplicates", v.duplicates());
        row.put("consumerRedeliveries", v.consumerRedeliveries());
        row.put("drainAfterFaultSeconds", v.drainSeconds());
        row.put("runSeconds", Math.round(seconds));
        row.put("holds", outcome.holds());
        row.put("notes", outcome.notes());
        row.put("failures", outcome.failures());
        rows.add(row);
        lines.add(line(outcome));
    }

    /** The scenario's line; call after {@link #add}, which records its run time. */
    String line(Trial.Outcome outcome) {
        Verdict v = outcome.verdict();
        return String.format("| %s | %d | %d | %d | %d | %d | %d | %d | %.1f | %d | %s |", v.scenario(), v.committed(),
                v.rolledBack(), v.delivered(), v.lost(), v.phantoms(), v.orderViolations(), v.duplicates(),
                v.drainSeconds(), rows.isEmpty() ? 0 : ((Number) rows.get(rows.size() - 1).get("runSeconds")).longValue(),
                outcome.holds() ? "pass" : "FAIL");
    }

    boolean holds() {
        return holds;
    }

    Path write() throws IOException {
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("form", form.toString());
        json.put("holds", holds);
        json.put("scenarios", rows);
        new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(dir.resolve("report.json").toFile(), json);
        StringBuilder markdown = new StringBuilder("QueueBox fault-injection suite, " + form.name() + " form\n\n");
        markdown.append(HEADER).append('\n');
        lines.forEach(line -> markdown.append(line).append('\n'));
        markdown.append('\n');
        for (Map<String, Object> row : rows) {
            markdown.append("- **").append(row.get("scenario")).append("**: ").append(row.get("notes"));
            List<?> failures = (List<?>) row.get("failures");
            if (!failures.isEmpty()) {
                markdown.append("; FAILED: ").append(failures);
            }
            markdown.append('\n');
        }
        Path file = dir.resolve("report.md");
        Files.writeString(file, markdown);
        return file;
    }
}
