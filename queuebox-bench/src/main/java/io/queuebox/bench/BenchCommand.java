package io.queuebox.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.queuebox.kafka.KafkaSettings;
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
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The benchmark ({@code bench/run.sh}): how fast the relay is against the floors and ceilings of this machine
 * and against its peers, all measured in the same run. See docs/performance.md for the workloads and how to
 * read the figures.
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = "Measures QueueBox against the floors and ceilings of this machine (PostgreSQL, RabbitMQ, Kafka) and its peers.")
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

    @Option(names = "--kafka-producer", paramLabel = "PROPERTY=VALUE", description = "A Kafka producer property over the"
            + " adapter's defaults, for the relay and for the producers it is compared with (repeatable), e.g."
            + " --kafka-producer max.in.flight.requests.per.connection=5.")
    Map<String, String> kafkaProducer = new LinkedHashMap<>();

    @Option(names = "--rows", defaultValue = "200000", description = "Rows of the headline drains (default ${DEFAULT-VALUE}).")
    int rows;

    @Option(names = "--matrix-rows", defaultValue = "10000", description = "Rows of each drain of the full matrix (default ${DEFAULT-VALUE}).")
    int matrixRows;

    @Option(names = "--aggregates", defaultValue = "1000", description = "Aggregates the rows are spread over (default ${DEFAULT-VALUE}).")
    int aggregates;

    @Option(names = "--rates", split = ",", defaultValue = "200,1000,5000", description = "Steady commit rates per second (default ${DEFAULT-VALUE}).")
    int[] rates;

    @Option(names = "--steady-seconds", defaultValue = "8", description = "Measured seconds per steady rate, after the warm-up (default ${DEFAULT-VALUE}).")
    int steadySeconds;

    @Option(names = "--idle-seconds", defaultValue = "10", description = "Seconds of the idle measurement per mode (default ${DEFAULT-VALUE}).")
    int idleSeconds;

    @Option(names = "--backlog-rows", defaultValue = "300000", description = "Rows of the backlog-memory drain (1,000,000 for the full test) (default ${DEFAULT-VALUE}).")
    int backlogRows;

    @Option(names = "--scale-rows", defaultValue = "40000", description = "Rows of each scale-out drain, measured with the relays warm (default ${DEFAULT-VALUE}).")
    int scaleRows;

    @Option(names = "--scale-warmup-rows", defaultValue = "10000", description = "Rows per relay process each scale-out run drains first, from GO with cold JVMs: the cold rate; 4 processes drain 4 times as many, so that each JVM is as warm as the single one (default ${DEFAULT-VALUE}).")
    int scaleWarmupRows;

    @Option(names = "--scale-aggregates", defaultValue = "1000", description = "Aggregates the scale-out rows are spread over; with"
            + " per-aggregate ordering and batch 500, 1000 aggregates let at most two batches be in flight at once (default ${DEFAULT-VALUE}).")
    int scaleAggregates;

    @Option(names = "--scale-processes", split = ",", defaultValue = "1,2,4", description = "Numbers of relay processes the"
            + " scale-out runs, in this order within each repetition (default ${DEFAULT-VALUE}).")
    List<Integer> scaleProcesses;

    @Option(names = "--scale-jvm-option", description = "An option added to every scale-out relay JVM's command line, for"
            + " example -Xlog:jit+compilation=debug:file=/tmp/jit-%%p.log; repeatable (default: -Xmx256m only).")
    List<String> scaleJvmOptions = new ArrayList<>();

    @Option(names = "--scale-settle-seconds", defaultValue = "0", description = "Before the scale-out's measured phase,"
            + " keep the relays draining rounds of warm-up rows until no relay JVM's JIT compilers use 10 %% of its CPU in a"
            + " round, for at most this long (default ${DEFAULT-VALUE}: no settling).")
    int scaleSettleSeconds;

    @Option(names = "--scale-reps", defaultValue = "3", description = "Interleaved repetitions of the scale-out (1, 2 and 4"
            + " processes in turn, then again); medians reported (default ${DEFAULT-VALUE}).")
    int scaleReps;

    @Option(names = "--reps", defaultValue = "3", description = "Interleaved repetitions of the side-by-side comparisons (peers, latency); medians reported (default ${DEFAULT-VALUE}).")
    int reps;

    @Option(names = "--peer-rows", defaultValue = "20000", description = "Rows of each drain of the side-by-side comparison with the floor and gruelbox (default ${DEFAULT-VALUE}).")
    int peerRows;

    @Option(names = "--peer-rates", split = ",", defaultValue = "200,1000", description = "Rates of Debezium alone and gruelbox in the latency comparison (default ${DEFAULT-VALUE}).")
    int[] peerRates;

    @Option(names = "--warmup-seconds", defaultValue = "2", description = "Shortest warm-up at each steady rate before measuring, not recorded; longer while the JIT compilers are busy (default ${DEFAULT-VALUE}).")
    int warmupSeconds;

    @Option(names = "--max-warmup-seconds", defaultValue = "30", description = "Longest warm-up at each steady rate, while the JIT compilers are still busy (default ${DEFAULT-VALUE}).")
    int maxWarmupSeconds;

    @Option(names = "--gruelbox-threads", defaultValue = "8", description = "gruelbox executor threads in the latency comparison (default ${DEFAULT-VALUE}).")
    int gruelboxThreads;

    @Option(names = "--no-peers", description = "Leave Debezium alone and gruelbox out of the latency workload.")
    boolean noPeers;

    @Option(names = "--inbox-messages", defaultValue = "20000", description = "Messages of each inbox-overhead run (default ${DEFAULT-VALUE}).")
    int inboxMessages;

    @Option(names = "--inbox-threads", defaultValue = "4", description = "Consumer threads of the inbox-overhead runs (default ${DEFAULT-VALUE}).")
    int inboxThreads;

    @Option(names = "--latency-modes", split = ",", description = "Relay cells of the latency workload to run: polling,"
            + " capture, notify, after-commit, capture-pipelined, after-commit-pipelined, polling-1s (default all; the"
            + " peers run unless --no-peers).")
    List<String> latencyModes;

    @Option(names = "--only", split = ",", description = "Workloads to run: drain, matrix, latency, peers, backlog, scale, inbox, quiet (default all).")
    List<String> only;

    @Option(names = "--results-dir", defaultValue = "bench/results", description = "Where <date>.json and <date>.md go (default ${DEFAULT-VALUE}).")
    Path resultsDir;

    @Option(names = "--charts-dir", description = "Where the SVG charts go (default: none written).")
    Path chartsDir;

    @Option(names = "--docs", description = "A Markdown file whose section between '<!-- bench:results:start -->' and '<!-- bench:results:end -->' is replaced by the summary.")
    Path docs;

    private final PrintStream out = System.out;

    public static void main(String[] args) {
        // Hibernate Validator (in gruelbox) logs through jboss-logging, which would otherwise pick log4j.
        System.setProperty("org.jboss.logging.provider", "slf4j");
        System.exit(new CommandLine(new BenchCommand()).setOverwrittenOptionsAllowed(true).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        BenchDatabase.validateName(pgDatabase);
        if (latencyModes != null) {
            for (String mode : latencyModes) {
                if (!LATENCY_MODES.contains(mode)) {
                    throw new IllegalArgumentException("--latency-modes: " + mode + " is not one of " + LATENCY_MODES);
                }
            }
        }
        // The figures go to standard output; the services' own INFO logs (the in-process broker's) would bury them.
        io.queuebox.bootstrap.internal.Logging.configure("text", "WARN");
        if (org.slf4j.LoggerFactory.getILoggerFactory() instanceof ch.qos.logback.classic.LoggerContext context) {
            // gruelbox logs two INFO lines per entry by default ("Processing", "Processed"): in a benchmark they
            // would measure the console; here it runs with WARN, which flatters it, if anything. The in-process
            // Kafka broker logs its shutdown at INFO under "kafka" and "state.change.logger".
            for (String noisy : List.of("com.gruelbox", "com.zaxxer.hikari", "org.hibernate.validator", "kafka", "state.change.logger")) {
                context.getLogger(noisy).setLevel(ch.qos.logback.classic.Level.WARN);
            }
        }
        if (smoke) {
            rows = 2000;
            rates = new int[] {200};
            peerRates = new int[] {200};
            steadySeconds = 2;
            warmupSeconds = 1;
            maxWarmupSeconds = 1;
            peerRows = 1000;
            reps = 1;
            idleSeconds = 2;
            backlogRows = 2000;
            inboxMessages = 1000;
            noKafka = noKafka || kafkaBootstrap == null;
            if (only == null) {
                only = List.of("drain", "latency", "peers", "backlog", "inbox", "quiet");
            }
        }
        Steady.maxWarmup(Duration.ofSeconds(maxWarmupSeconds));
        long started = System.nanoTime();
        // What makes the run fail once its results are written: events never delivered, a broker short of a drain.
        List<String> failures = new ArrayList<>();
        Map<String, Object> results = new LinkedHashMap<>();
        String date = ZonedDateTime.now(ZoneOffset.UTC).format(DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH-mm'Z'"));
        results.put("date", date);
        results.put("suite", smoke ? "smoke" : "standard");
        try (BenchDatabase db = new BenchDatabase(pgHost, pgPort, pgUser, pgDatabase, 16);
             Brokers brokers = Brokers.open(rabbitUri, !noKafka, kafkaBootstrap).kafkaProducerOverrides(kafkaProducer)) {
            Map<String, Object> machine = machine(db, brokers);
            results.put("machine", machine);
            Map<String, Object> settings = settings(brokers);
            results.put("settings", settings);
            out.println("QueueBox bench (" + results.get("suite") + ")");
            machine.forEach((k, v) -> out.println("  machine." + k + ": " + v));
            settings.forEach((k, v) -> out.println("  settings." + k + ": " + v));
            double idleCpu = Cpu.measureIdle(Duration.ofSeconds(smoke ? 1 : 3));
            machine.put("jvmIdleCpuMsPerSecond", idleCpu);
            machine.put("machineIdleCpuMsPerSecond", Cpu.machineIdleMillisPerSecond());
            out.println("  machine.jvmIdleCpuMsPerSecond: " + idleCpu + " (the bench JVM with its brokers' clients" + (brokers.hasKafka() ? " and the in-process Kafka broker" : "") + ", nothing running)");
            Map<String, String> postgres = db.postgresSettings();
            results.put("postgresSettings", postgres);
            postgres.forEach((k, v) -> out.println("  postgres." + k + ": " + v));
            OutboxStore store = db.outbox.store();
            List<String> brokerNames = brokers.hasKafka() ? List.of("kafka", "rabbitmq") : List.of("rabbitmq");
            String peerBroker = brokers.hasKafka() ? "kafka" : "rabbitmq";
            Floor floor = new Floor(db);
            Drain drain = new Drain(db, brokers, floor, out);
            Gruelbox gruelbox = new Gruelbox(db, brokers, out);

            if (runs("drain") || runs("matrix") || runs("peers")) {
                out.println("Warm-up (not recorded)");
                // The first drain of a fresh JVM runs interpreted code.
                drain.relay("none", true, 2, 500, Math.min(rows, 20_000), aggregates, false);
                floor.run(Floor.Marking.UPDATE, 2, 500, Math.min(rows, 20_000), aggregates);
                for (String broker : brokerNames) {
                    drain.relay(broker, true, 2, 500, Math.min(rows, 5_000), aggregates, false);
                }
                if (runs("peers")) {
                    gruelbox.drain("none", 8, 500, Math.min(peerRows, 5_000), aggregates);
                }
            }
            if (runs("drain") || runs("matrix")) {
                out.println("Drain (relay ÷ pure-SQL floor of the same loops, batch and rows; and ÷ min(floor, broker ceiling))");
                List<Map<String, Object>> drains = new ArrayList<>();
                Map<String, Map<String, Object>> ceilings = new LinkedHashMap<>();
                if (runs("matrix") && !smoke) {
                    Map<String, Run> brokerCeilings = brokerCeilings(drain, brokerNames, matrixRows);
                    ceilings.put(Integer.toString(matrixRows), rates(brokerCeilings));
                    for (boolean ordered : new boolean[] {false, true}) {
                        for (int workers : new int[] {1, 2, 4}) {
                            for (int batch : new int[] {100, 500, 1000}) {
                                drain.cell(drains, brokerNames, brokerCeilings, ordered, workers, batch, matrixRows, aggregates, "matrix", false);
                            }
                        }
                    }
                }
                if (runs("drain")) {
                    Map<String, Run> brokerCeilings = brokerCeilings(drain, brokerNames, rows);
                    ceilings.put(Integer.toString(rows), rates(brokerCeilings));
                    int batch = smoke ? 100 : 500;
                    for (boolean ordered : smoke ? new boolean[] {true} : new boolean[] {false, true}) {
                        drain.cell(drains, brokerNames, brokerCeilings, ordered, 2, batch, rows, aggregates, "headline", false);
                    }
                    drain.cell(drains, List.of(peerBroker), brokerCeilings, true, 2, batch, rows, aggregates, "headline", true);
                }
                results.put("brokerCeilings", ceilings);
                results.put("drain", drains);
            }
            if (runs("peers")) {
                out.println("Side by side: pure-SQL floor, QueueBox, gruelbox transaction-outbox (" + peerRows + " rows each, batch 500, "
                        + reps + " interleaved repetition(s))");
                results.put("peers", new Peers(drain, floor, gruelbox, out).drain(peerRows, aggregates, reps, peerBroker, true,
                        brokerNames.contains("rabbitmq")));
            }
            if (runs("latency")) {
                out.println("Idle cost and steady rate (relay: workers " + Latency.WORKERS + ", batch 500, ordering on; consumer on RabbitMQ; "
                        + reps + " interleaved repetition(s))");
                Latency latency = new Latency(db, brokers, store, out);
                DebeziumAlone debezium = new DebeziumAlone(db, brokers, out, null);
                DebeziumAlone debeziumPrompt = new DebeziumAlone(db, brokers, out, 1);
                NotifyAlone notifyAlone = new NotifyAlone(db, brokers, out);
                List<Map<String, Object>> modes = new ArrayList<>();
                Duration idle = Duration.ofSeconds(idleSeconds);
                Duration warmup = Duration.ofSeconds(warmupSeconds);
                Duration measure = Duration.ofSeconds(steadySeconds);
                for (int rep = 1; rep <= reps; rep++) {
                    Duration idleOnce = rep == 1 ? idle : null;
                    if (latencyRuns("polling")) {
                        modes.add(rep(rep, latency.run("polling", Duration.ofMillis(100), rates, idleOnce, warmup, measure)));
                    }
                    if (!smoke) {
                        for (String mode : List.of("capture", "notify", "after-commit")) {
                            if (latencyRuns(mode)) {
                                modes.add(rep(rep, latency.run(mode, Latency.RECONCILIATION, rates, idleOnce, warmup, measure)));
                            }
                        }
                        // Pipelined workers beside the serial default, in the same repetition.
                        for (String mode : List.of("capture", "after-commit")) {
                            if (latencyRuns(mode + "-pipelined")) {
                                modes.add(rep(rep, latency.run(mode, Latency.RECONCILIATION, rates, null, warmup, measure,
                                        Drain.PIPELINED)));
                            }
                        }
                        if (!noPeers) {
                            modes.add(rep(rep, debezium.run(peerRates, warmup, measure)));
                            modes.add(rep(rep, debeziumPrompt.run(peerRates, warmup, measure)));
                            modes.add(rep(rep, notifyAlone.run(peerRates, warmup, measure)));
                        }
                    }
                    if (!noPeers) {
                        modes.add(rep(rep, gruelbox.latency(gruelboxThreads, peerRates, warmup, measure)));
                    }
                }
                if (!smoke && latencyRuns("polling-1s")) {
                    modes.add(rep(1, latency.run("polling", Duration.ofSeconds(1), rates, idle, warmup, measure)));
                }
                results.put("latency", modes);
                List<Map<String, Object>> medians = Peers.latencyMedians(modes);
                results.put("latencyComparison", medians);
                out.println("  medians over the repetitions:");
                for (Map<String, Object> row : medians) {
                    out.printf(java.util.Locale.ROOT, "    %-62s %5s/s  p50 %7s ms  p99 %7s ms  cpu %6s ms/1000 (%6s above idle)  (%s)%n", row.get("system"),
                            row.get("targetPerSecond"), row.get("p50Ms"), row.get("p99Ms"), row.get("cpuMsPer1000"),
                            row.get("cpuAboveIdleMsPer1000"), row.get("endPoint"));
                }
                for (String line : Report.behind(modes)) {
                    out.println("  not all seen within " + Steady.WINDOW.toSeconds() + " s: " + line);
                }
                Report.neverSeen(modes).forEach(cell -> failures.add("latency: " + cell));
                if (smoke) {
                    for (Map<String, Object> row : medians) {
                        if (((Number) row.get("events")).longValue() == 0 || ((Number) row.get("notSeen")).longValue() != 0) {
                            failures.add("smoke: steady rate lost events: " + row);
                        }
                    }
                }
            }
            if (runs("inbox")) {
                out.println("Inbox overhead (per message: business row alone, or inbox entry + business row; one transaction each)");
                results.put("inbox", new InboxOverhead(db, out).run(inboxMessages, inboxThreads, reps, aggregates));
            }
            if (runs("quiet")) {
                out.println("A backlog after a quiet spell (one connection, ordered held claims of 500, no broker)");
                results.put("quiet", new QuietThenBurst(db, out).run(smoke ? 2_000 : 40_000, aggregates, 60));
            }
            Children children = new Children(db, brokers, out);
            if (runs("backlog")) {
                out.println("Backlog memory (child JVM, -Xmx256m)");
                results.put("backlog", children.backlog(backlogRows, brokers.hasKafka() ? "kafka" : "rabbitmq"));
            }
            if (runs("scale") && !smoke) {
                out.println("Scale-out (child JVMs, RabbitMQ, workers 2, batch 500, ordering on, " + scaleAggregates + " aggregates; cold: GO → " + scaleWarmupRows
                        + " warm-up rows per process consumed; warm: commit of " + scaleRows + " rows → last consumed)");
                List<Map<String, Object>> scale = new ArrayList<>();
                for (int rep = 1; rep <= Math.max(1, scaleReps); rep++) {
                    for (int processes : scaleProcesses) {
                        if (processes < 1) {
                            throw new IllegalArgumentException("--scale-processes: " + processes + " is not a number of processes");
                        }
                        Map<String, Object> run = children.scaleOut(processes, scaleWarmupRows, scaleRows, scaleAggregates,
                                scaleJvmOptions, scaleSettleSeconds);
                        run.put("rep", rep);
                        scale.add(run);
                    }
                }
                results.put("scaleOut", scale);
                List<Map<String, Object>> medians = ScaleOutMedians.of(scale);
                medians.forEach(m -> out.printf("  scale-out %s process(es), median of %s: warm %s rows/s (each %s), cold %s rows/s,"
                                + " empty claims %s of %s, duplicates %s%n", m.get("processes"), m.get("reps"),
                        m.get("medianRowsPerSecond"), m.get("eachRowsPerSecond"), m.get("medianColdRowsPerSecond"),
                        m.get("emptyClaims"), m.get("claims"), m.get("duplicates")));
                results.put("scaleOutMedians", medians);
            }
            db.reset();
            drain.shortfalls().forEach(shortfall -> failures.add("drain: " + shortfall));
        }
        double seconds = Brokers.seconds(started);
        results.put("elapsedSeconds", Math.round(seconds));
        results.put("failures", failures);
        out.printf("Finished in %.0f s%n", seconds);
        write(results, date);
        if (!failures.isEmpty()) {
            System.err.println("The bench FAILED (figures kept in " + resultsDir + "): " + failures.size() + " cell(s) did not deliver everything");
            failures.forEach(failure -> System.err.println("  " + failure));
            return 1;
        }
        return 0;
    }

    private static Map<String, Object> rep(int rep, Map<String, Object> mode) {
        mode.put("rep", rep);
        return mode;
    }

    private boolean runs(String workload) {
        return only == null || only.contains(workload);
    }

    static final List<String> LATENCY_MODES = List.of("polling", "capture", "notify", "after-commit", "capture-pipelined",
            "after-commit-pipelined", "polling-1s");

    private boolean latencyRuns(String mode) {
        return latencyModes == null || latencyModes.contains(mode);
    }

    private Map<String, Run> brokerCeilings(Drain drain, List<String> brokerNames, int n) throws Exception {
        Map<String, Run> ceilings = new LinkedHashMap<>();
        for (String broker : brokerNames) {
            Run run = drain.brokerCeiling(broker, n, aggregates);
            ceilings.put(broker, run);
            out.printf(Locale.ROOT, "  broker ceiling %-8s %7d rows: %8.0f/s  machine cpu %s ms/1000 above idle%n", broker, n,
                    run.rowsPerSecond(), run.machineCpuAboveIdleMsPerThousand());
        }
        return ceilings;
    }

    /** The ceilings as the results record them: each broker's rate, and the machine's CPU per 1,000 rows. */
    private static Map<String, Object> rates(Map<String, Run> ceilings) {
        Map<String, Object> rates = new LinkedHashMap<>();
        ceilings.forEach((broker, run) -> {
            rates.put(broker, (double) Math.round(run.rowsPerSecond()));
            rates.put(broker + "MachineCpuAboveIdleMsPer1000", run.machineCpuAboveIdleMsPerThousand());
        });
        return rates;
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
        settings.put("headlineConfig", "workers 2, batch " + (smoke ? 100 : 500) + ", ordering none and per-aggregate; and per-aggregate with deleteOnSend to "
                + (brokers.hasKafka() ? "Kafka" : "RabbitMQ"));
        settings.put("sqlFloor", "no engine: per loop, one transaction per batch: SELECT the publishable columns of `batch` pending rows ORDER BY seq"
                + " FOR UPDATE SKIP LOCKED, then UPDATE … SET status='sent', sent_at=now() (or DELETE) WHERE event_id = ANY(ids);"
                + " table " + Floor.TABLE + " LIKE the outbox INCLUDING ALL; as many loops as relay workers");
        settings.put("peers", "gruelbox transaction-outbox 4.2.268 (DefaultPersistor, POSTGRESQL_9, own HikariCP pool); per entry: insert"
                + " of the serialised invocation; lock by id FOR UPDATE SKIP LOCKED, call, DELETE, commit (plus, when flushed, a batch"
                + " SELECT … FOR UPDATE SKIP LOCKED and an UPDATE per entry); the method is a no-op or publishes and waits for the"
                + " broker's ack (RabbitMQ confirm, Kafka send().get()); no ordering; its per-entry INFO logging off (WARN). Debezium alone: embedded PostgresConnector,"
                + " pgoutput, poll " + Latency.CAPTURE_POLL.toMillis() + " ms, publication WITH (publish = 'insert') on "
                + DebeziumAlone.TABLE + ", offsets in a file; its handler publishes each event to RabbitMQ and waits for the batch's confirms;"
                + " two cells: Debezium's default max.batch.size (2048) and max.batch.size 1 (as QueueBox's capture reads the log)."
                + " LISTEN/NOTIFY alone: a row trigger on " + NotifyAlone.TABLE + " notifies each row's event id, one session"
                + " listens with pgjdbc's getNotifications(500 ms), as QueueBox's wake source does; commit → notification returned");
        settings.put("peerRows", peerRows);
        settings.put("peerRates", java.util.Arrays.toString(peerRates));
        settings.put("reps", reps + " interleaved repetitions, medians reported (idle cost measured in the first only)");
        settings.put("warmupSeconds", "at least " + warmupSeconds + " s at each rate before measuring, not recorded, then on in"
                + " steps of 1 s while the JVM's JIT compilers spent " + Steady.SETTLED_COMPILE_MS_PER_SECOND + " ms or more"
                + " in the last second, up to " + maxWarmupSeconds + " s (each row: warmupSeconds, and"
                + " jitCompileMs over its measured part)");
        settings.put("cpu", "JVM process CPU (OperatingSystemMXBean#getProcessCpuTime) over the run, per 1,000 events; includes the bench's"
                + " producers and consumer and, with Kafka, the in-process broker; PostgreSQL's CPU is not in it. 'Above idle' subtracts"
                + " the JVM's idle CPU rate (machine.jvmIdleCpuMsPerSecond) over the run's wall time. Steady rates: from the end of the"
                + " warm-up to the last event seen, per measured event");
        settings.put("matrix", smoke ? "none" : "ordering none/per-aggregate x workers 1/2/4 x batch 100/500/1000");
        settings.put("relay", "DeliveryEngine + PostgreSQL store on a HikariCP pool of 16, claims that hold row locks (the PostgreSQL default; rows marked leased write a lease per row), wake interval 100 ms in drains; 'no-op' = a publisher that acks at once");
        settings.put("kafkaProducer", "adapter defaults: " + new TreeMap<>(KafkaSettings.PRODUCER_DEFAULTS)
                + (kafkaProducer.isEmpty() ? "" : "; overridden here: " + new TreeMap<>(kafkaProducer))
                + "; topic " + Brokers.TOPIC + " (3 partitions)" + (brokers.hasKafka() ? "" : " (not used)"));
        settings.put("rabbitmq", "exchange " + Brokers.EXCHANGE + " (topic, durable) bound to durable queue " + Brokers.QUEUE
                + "; persistent, mandatory, publisher confirms");
        settings.put("rates", java.util.Arrays.toString(rates) + " per second, one event per transaction, up to 8 producer threads");
        settings.put("gruelboxLatency", gruelboxThreads + " executor threads, immediate path (post-commit submit), RabbitMQ confirm per entry");
        settings.put("steadyRelay", "workers " + Latency.WORKERS + ", batch 500, ordering per-aggregate, RabbitMQ; latency = consume time - commit time (same JVM, System.nanoTime)");
        settings.put("steadySeconds", steadySeconds);
        settings.put("idleSeconds", idleSeconds);
        settings.put("capture", "postgres-logical via CaptureSupervisor + DebeziumCapture, poll " + Latency.CAPTURE_POLL.toMillis()
                + " ms, reconciliation (engine wake interval) " + Latency.RECONCILIATION.toSeconds() + " s");
        settings.put("inbox", inboxMessages + " messages per run, " + inboxThreads + " consumer threads, a pooled connection and one"
                + " transaction per message; 'plain' inserts the business row (uuid, text, the payload as bytea), 'inbox' runs"
                + " JdbcInbox.process (INSERT … ON CONFLICT DO NOTHING into " + InboxOverhead.SCHEMA + ".queuebox_inbox) then the same"
                + " insert; no broker (its receive and ack cost the same either way); " + reps + " interleaved repetitions, medians");
        settings.put("backlogRows", backlogRows);
        settings.put("scaleRows", smoke ? 0 : scaleRows);
        settings.put("scaleWarmupRows", smoke ? 0 : scaleWarmupRows);
        settings.put("scaleAggregates", scaleAggregates);
        settings.put("scaleProcesses", scaleProcesses);
        settings.put("scaleJvmOptions", scaleJvmOptions);
        settings.put("scaleSettleSeconds", scaleSettleSeconds);
        settings.put("scaleOut", scaleProcesses + " relay child JVMs (-Xmx256m, workers 2, batch 500, per-aggregate ordering, wake interval"
                + " 100 ms) to RabbitMQ, rows over " + scaleAggregates + " aggregates; cold: from GO to the last of the warm-up rows"
                + " (" + scaleWarmupRows + " per process, committed before GO) consumed; warm: the measured rows committed in one INSERT once every warm-up row was"
                + " consumed and the sent rows were deleted and the table vacuumed, from that commit to the last of them consumed; duplicates and per-process figures per phase; "
                + scaleReps + " interleaved repetitions (" + scaleProcesses + " processes in turn), medians");
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
