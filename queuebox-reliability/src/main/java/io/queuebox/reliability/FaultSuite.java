package io.queuebox.reliability;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Runs the fault-injection scenarios against the runnable jar and the local services, prints one line per
 * scenario and writes the report. Exits 1 when any scenario lost, invented or reordered an event, or failed
 * one of its own checks.
 */
@Command(name = "reliability/run.sh", mixinStandardHelpOptions = true,
        description = "The fault-injection suite of docs/reliability.md.")
public final class FaultSuite implements Callable<Integer> {

    @Option(names = "--long", description = "The long form (50 kills over 100,000 events, 60 s outages, 30 s cuts)"
            + " instead of the short one CI runs.")
    boolean longForm;

    @Option(names = "--only", split = ",", paramLabel = "SCENARIO",
            description = "Run only these scenarios: ${COMPLETION-CANDIDATES}.", completionCandidates = Names.class)
    List<String> only = new ArrayList<>();

    @Option(names = "--jar", description = "The runnable jar (default: ${DEFAULT-VALUE}).",
            defaultValue = "queuebox-bootstrap/target/queuebox.jar")
    Path jar;

    @Option(names = "--report-dir", description = "Where the report and the relays' logs go (default: ${DEFAULT-VALUE}).",
            defaultValue = "queuebox-reliability/target/reliability")
    Path reportDir;

    static final class Names extends ArrayList<String> {
        Names() {
            super(Scenarios.all().keySet());
        }
    }

    public static void main(String[] args) {
        System.exit(new CommandLine(new FaultSuite()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        Form form = longForm ? Form.longForm() : Form.shortForm();
        if (!Files.isRegularFile(jar)) {
            System.err.println("no runnable jar at " + jar + ": build it first (./mvnw -pl queuebox-bootstrap -am package)");
            return 2;
        }
        Map<String, Scenarios.Scenario> scenarios = Scenarios.all();
        for (String name : only) {
            if (!scenarios.containsKey(name)) {
                System.err.println("unknown scenario '" + name + "'; known: " + String.join(", ", scenarios.keySet()));
                return 2;
            }
        }
        Path runDir = Files.createDirectories(reportDir.resolve(form.name() + "-" + Instant.now().toString().replace(':', '-')));
        Report report = new Report(form, runDir);
        System.out.println("QueueBox fault-injection suite, " + form.name() + " form; relay logs in " + runDir);
        System.out.println(Report.HEADER);
        try (Bed bed = new Bed(jar.toAbsolutePath(), runDir)) {
            for (Map.Entry<String, Scenarios.Scenario> scenario : scenarios.entrySet()) {
                if (!only.isEmpty() && !only.contains(scenario.getKey())) {
                    continue;
                }
                long start = System.nanoTime();
                Trial.Outcome outcome;
                try {
                    outcome = scenario.getValue().run(bed, form);
                } catch (Exception | AssertionError e) {
                    outcome = Report.crashed(scenario.getKey(), e);
                }
                report.add(outcome, (System.nanoTime() - start) / 1e9);
                System.out.println(report.line(outcome));
                outcome.failures().forEach(failure -> System.out.println("    FAILED: " + failure));
                System.out.flush();
            }
        }
        Path written = report.write();
        System.out.println("report: " + written);
        System.out.println(report.holds() ? "PASSED: lost, phantoms and order violations are 0 in every scenario"
                : "FAILED: see the lines above");
        return report.holds() ? 0 : 1;
    }
}
