package io.queuebox.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.queuebox.ports.OutboxStore;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code queuebox bench}: how fast the relay is against the ceilings of the same machine, measured in the
 * same run. See docs/performance.md for the workloads and how to read the figures.
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = "Measures QueueBox against the ceilings of this machine (PostgreSQL, RabbitMQ, Kafka).")
public final class BenchCommand implements Callable<Integer> {

    @Option(names = "--smoke", description = "A short run that only proves the bench works (PostgreSQL and RabbitMQ; Kafka only with --kafka-bootstrap).")
    boolean smoke;

    @Option(names = "--pg-host", defaultValue = "127.0.0.1", description = "PostgreSQL host (default ${DEFAULT-VALUE}).")
    String pgHost;

    @Option(names = "--pg-port", defaultValue = "5432", description = "PostgreSQL port (default ${DEFAULT-VALUE}).")
    int pgPort;

    @Option(names = "--pg-user", defaultValue = "postgres", description = "PostgreSQL user, trust or .pgpass authentication (default ${DEFAULT-VALUE}).")
    String pgUser;

    @Option(names = "--pg-database", defaultValue = "queuebox_bench", description = "Database of the bench, created if missing (default ${DEFAULT-VALUE}).")
    String pgDatabase;

    @Option(names = "--rabbitmq-uri", defaultValue = "amqp://guest:guest@127.0.0.1:5672/%2F", description = "RabbitMQ URI (default the local guest account).")
    String rabbitUri;

    @Option(names = "--kafka-bootstrap", description = "An external Kafka; without it the bench starts one in-process (needs its classes on the classpath).")
    String kafkaBootstrap;

    @Option(names = "--no-kafka", description = "Leave Kafka out.")
    boolean noKafka;

    @Option(names = "--rows", defaultValue = "200000", description = "Rows of the headline drains (default ${DEFAULT-VALUE}).")
    int rows;

    @Option(names = "--matrix-rows", defaultValue = "10000", description = "Rows of each drain of the full matrix (default ${DEFAULT-VALUE}).")
    int matrixRows;

    @Option(names = "--aggregates", defaultValue = "1000", description = "Aggregates the rows are spread over (default ${DEFAULT-VALUE}).")
    int aggregates;

    @Option(names = "--rates", split = ",", defaultValue = "200,1000,5000", description = "Steady commit rates per second (default ${DEFAULT-VALUE}).")
    int[] rates;

    @Option(names = "--steady-seconds", defaultValue = "8", description = "Measured seconds per steady rate, after 1 s warm-up (default ${DEFAULT-VALUE}).")
    int steadySeconds;

    @Option(names = "--idle-seconds", defaultValue = "10", description = "Seconds of the idle measurement per mode (default ${DEFAULT-VALUE}).")
    int idleSeconds;

    @Option(names = "--backlog-rows", defaultValue = "300000", description = "Rows of the backlog-memory drain (1,000,000 for the full test) (default ${DEFAULT-VALUE}).")
    int backlogRows;

    @Option(names = "--scale-rows", defaultValue = "20000", description = "Rows of each scale-out drain (default ${DEFAULT-VALUE}).")
    int scaleRows;

    @Option(names = "--only", split = ",", description = "Workloads to run: drain, matrix, latency, backlog, scale (default all).")
    List<String> only;

    @Option(names = "--results-dir", defaultValue = "bench/results", description = "Where <date>.json and <date>.md go (default ${DEFAULT-VALUE}).")
    Path resultsDir;

    @Option(names = "--charts-dir", description = "Where the SVG charts go (default: none written).")
    Path chartsDir;

    @Option(names = "--docs", description = "A Markdown file whose section between '<!-- bench:results:start -->' and '<!-- bench:results:end -->' is replaced by the summary.")
    Path docs;

    private final PrintStream out = System.out;

    public static void main(String[] args) {
        System.exit(new CommandLine(new BenchCommand()).setOverwrittenOptionsAllowed(true).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        BenchDatabase.validateName(pgDatabase);
        // The figures go to standard output; the services' own INFO logs (the in-process broker's) would bury them.
        io.queuebox.bootstrap.internal.Logging.configure("text", "WARN");
        if (smoke) {
            rows = 2000;
            rates = new int[] {200};
            steadySeconds = 2;
            idleSeconds = 2;
            backlogRows = 2000;
            noKafka = noKafka || kafkaBootstrap == null;
            if (only == null) {
                only = List.of("drain", "latency", "backlog");
            }
        }
        long started = System.nanoTime();
        Map<String, Object> results = new LinkedHashMap<>();
        String date = ZonedDateTime.now(ZoneOffset.UTC).format(DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH-mm'Z'"));
        results.put("date", date);
        results.put("suite", smoke ? "smoke" : "standard");
        try (BenchDatabase db = new BenchDatabase(pgHost, pgPort, pgUser, pgDatabase, 16);
             Brokers brokers = Brokers.open(rabbitUri, !noKafka, kafkaBootstrap)) {
            Map<String, Object> machine = machine(db, brokers);
            results.put("machine", machine);
            Map<String, Object> settings = settings(brokers);
            results.put("settings", settings);
            out.println("QueueBox bench (" + results.get("suite") + ")");
            machine.forEach((k, v) -> out.println("  machine." + k + ": " + v));
            settings.forEach((k, v) -> out.println("  settings." + k + ": " + v));
            OutboxStore store = db.outbox.store();
            List<String> brokerNames = brokers.hasKafka() ? List.of("kafka", "rabbitmq") : List.of("rabbitmq");

            if (runs("drain") || runs("matrix")) {
                out.println("Drain");
                Drain drain = new Drain(db, brokers, store, out);
                // Warm-up, not recorded: the first drain of a fresh JVM runs interpreted code.
                drain.relay("none", true, 2, 500, Math.min(rows, 20_000), aggregates);
                for (String broker : brokerNames) {
                    drain.relay(broker, true, 2, 500, Math.min(rows, 5_000), aggregates);
                }
                List<Map<String, Object>> drains = new ArrayList<>();
                Map<String, Map<String, Double>> ceilings = new LinkedHashMap<>();
                if (runs("matrix") && !smoke) {
                    Map<String, Double> brokerCeilings = brokerCeilings(drain, brokerNames, matrixRows);
                    ceilings.put(Integer.toString(matrixRows), brokerCeilings);
                    for (boolean ordered : new boolean[] {false, true}) {
                        for (int workers : new int[] {1, 2, 4}) {
                            for (int batch : new int[] {100, 500, 1000}) {
                                drain.cell(drains, brokerNames, brokerCeilings, ordered, workers, batch, matrixRows, aggregates, "matrix");
                            }
                        }
                    }
                }
                if (runs("drain")) {
                    Map<String, Double> brokerCeilings = brokerCeilings(drain, brokerNames, rows);
                    ceilings.put(Integer.toString(rows), brokerCeilings);
                    for (boolean ordered : smoke ? new boolean[] {true} : new boolean[] {false, true}) {
                        drain.cell(drains, brokerNames, brokerCeilings, ordered, 2, smoke ? 100 : 500, rows, aggregates, "headline");
                    }
                }
                results.put("brokerCeilings", ceilings);
                results.put("drain", drains);
            }
            if (runs("latency")) {
                out.println("Idle cost and steady rate (relay: workers " + Latency.WORKERS + ", batch 500, ordering on; consumer on RabbitMQ)");
                Latency latency = new Latency(db, brokers, store, out);
                List<Map<String, Object>> modes = new ArrayList<>();
                Duration idle = Duration.ofSeconds(idleSeconds);
                Duration measure = Duration.ofSeconds(steadySeconds);
                modes.add(latency.run("polling", Duration.ofMillis(100), rates, idle, measure));
                if (!smoke) {
                    modes.add(latency.run("polling", Duration.ofSeconds(1), rates, idle, measure));
                    modes.add(latency.run("capture", Latency.RECONCILIATION, rates, idle, measure));
                }
                results.put("latency", modes);
                if (smoke) {
                    for (Map<String, Object> mode : modes) {
                        for (Object row : (List<?>) mode.get("steady")) {
                            Map<?, ?> steady = (Map<?, ?>) row;
                            if (((Number) steady.get("events")).longValue() == 0
                                    || ((Number) steady.get("notConsumedWithin10s")).longValue() != 0) {
                                throw new IllegalStateException("steady rate lost events: " + steady);
                            }
                        }
                    }
                }
            }
            Children children = new Children(db, brokers, out);
            if (runs("backlog")) {
                out.println("Backlog memory (child JVM, -Xmx256m)");
                results.put("backlog", children.backlog(backlogRows, brokers.hasKafka() ? "kafka" : "rabbitmq"));
            }
            if (runs("scale") && !smoke) {
                out.println("Scale-out (child JVMs, RabbitMQ, workers 2, batch 500, ordering on)");
                List<Map<String, Object>> scale = new ArrayList<>();
                for (int processes : new int[] {1, 2, 4}) {
                    scale.add(children.scaleOut(processes, scaleRows));
                }
                results.put("scaleOut", scale);
            }
            db.reset();
        }
        double seconds = Brokers.seconds(started);
        results.put("elapsedSeconds", Math.round(seconds));
        out.printf("Finished in %.0f s%n", seconds);
        write(results, date);
        return 0;
    }

    private boolean runs(String workload) {
        return only == null || only.contains(workload);
    }

    private Map<String, Double> brokerCeilings(Drain drain, List<String> brokerNames, int n) throws Exception {
        Map<String, Double> ceilings = new LinkedHashMap<>();
        for (String broker : brokerNames) {
            double rate = drain.brokerCeiling(broker, n, aggregates);
            ceilings.put(broker, (double) Math.round(rate));
            out.printf("  broker ceiling %-8s %7d rows: %8.0f/s%n", broker, n, rate);
        }
        return ceilings;
    }

    private Map<String, Object> machine(BenchDatabase db, Brokers brokers) throws Exception {
        Map<String, Object> machine = new LinkedHashMap<>();
        machine.put("cores", Runtime.getRuntime().availableProcessors());
        long memory = 0;
        for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
            if (line.startsWith("MemTotal:")) {
                memory = Long.parseLong(line.replaceAll("\\D", "")) / 1024 / 1024;
            }
        }
        machine.put("memoryGiB", memory);
        machine.put("loadAverageAtStart", Latency.round(ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage(), 2));
        machine.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version"));
        machine.put("java", System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version"));
        machine.put("postgresql", db.serverVersion() + " (wal_level " + db.walLevel() + ")");
        machine.put("rabbitmq", brokers.rabbitVersion());
        machine.put("kafka", brokers.kafkaDescription());
        return machine;
    }

    private Map<String, Object> settings(Brokers brokers) {
        Map<String, Object> settings = new LinkedHashMap<>();
        settings.put("database", pgHost + ":" + pgPort + "/" + pgDatabase);
        settings.put("headlineRows", rows);
        settings.put("matrixRows", smoke ? 0 : matrixRows);
        settings.put("aggregates", aggregates);
        settings.put("payloadBytes", Brokers.payload(1).length);
        settings.put("headlineConfig", "workers 2, batch " + (smoke ? 100 : 500) + ", ordering none and per-aggregate");
        settings.put("matrix", smoke ? "none" : "ordering none/per-aggregate x workers 1/2/4 x batch 100/500/1000");
        settings.put("relay", "DeliveryEngine + PostgreSQL store on a HikariCP pool of 16, wake interval 100 ms in drains");
        settings.put("kafkaProducer", "adapter defaults: enable.idempotence=true, acks=all, max.in.flight=5, linger.ms=0; topic "
                + Brokers.TOPIC + (brokers.hasKafka() ? "" : " (not used)"));
        settings.put("rabbitmq", "exchange " + Brokers.EXCHANGE + " (topic, durable) bound to durable queue " + Brokers.QUEUE
                + "; persistent, mandatory, publisher confirms");
        settings.put("rates", java.util.Arrays.toString(rates) + " per second, one event per transaction, up to 8 producer threads");
        settings.put("steadyRelay", "workers " + Latency.WORKERS + ", batch 500, ordering per-aggregate, RabbitMQ; latency = consume time - commit time (same JVM, System.nanoTime)");
        settings.put("steadySeconds", steadySeconds);
        settings.put("idleSeconds", idleSeconds);
        settings.put("capture", "postgres-logical via CaptureSupervisor + DebeziumCapture, poll " + Latency.CAPTURE_POLL.toMillis()
                + " ms, reconciliation (engine wake interval) " + Latency.RECONCILIATION.toSeconds() + " s");
        settings.put("backlogRows", backlogRows);
        settings.put("scaleRows", smoke ? 0 : scaleRows);
        return settings;
    }

    private void write(Map<String, Object> results, String date) throws Exception {
        Files.createDirectories(resultsDir);
        Path json = resultsDir.resolve(date + ".json");
        new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(json.toFile(), results);
        Report report = new Report(results);
        String chartsLink = null;
        if (chartsDir != null) {
            Files.createDirectories(chartsDir);
            for (Map.Entry<String, String> chart : report.charts().entrySet()) {
                Files.writeString(chartsDir.resolve(chart.getKey()), chart.getValue());
            }
            chartsLink = docs != null ? docs.toAbsolutePath().getParent().relativize(chartsDir.toAbsolutePath()).toString()
                    : chartsDir.toString();
        }
        String summary = report.markdown(chartsLink);
        Path md = resultsDir.resolve(date + ".md");
        Files.writeString(md, summary);
        out.println("Wrote " + json + " and " + md + (chartsDir == null ? "" : " and charts in " + chartsDir));
        if (docs != null && Files.exists(docs)) {
            String text = Files.readString(docs);
            int start = text.indexOf(Report.START);
            int end = text.indexOf(Report.END);
            if (start >= 0 && end > start) {
                Files.writeString(docs, text.substring(0, start + Report.START.length()) + "\n" + summary
                        + text.substring(end));
                out.println("Updated the results section of " + docs);
            }
        }
    }
}
