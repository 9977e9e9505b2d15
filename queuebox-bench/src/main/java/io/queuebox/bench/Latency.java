package io.queuebox.bench;

import com.rabbitmq.client.Channel;
import io.queuebox.capture.DebeziumCapture;
import io.queuebox.domain.InsertNotificationWakeSource;
import io.queuebox.jdbc.DedicatedConnectionLock;
import io.queuebox.capture.FileCaptureStateDirectory;
import io.queuebox.domain.CaptureStatus;
import io.queuebox.domain.CaptureSupervisor;
import io.queuebox.domain.DeliverySettings;
import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.ports.CaptureMode;
import io.queuebox.ports.CaptureSettings;
import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.OutboxWriter;
import io.queuebox.ports.WakeSource;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Workloads 2 and 3 on one running relay per mode: first the idle cost (statements per second with nothing to
 * do), then producers committing one event per transaction at fixed rates while a RabbitMQ consumer measures
 * commit-to-consume latency.
 */
final class Latency {

    static final String COMMIT_HEADER = "bench-commit-epoch-us";
    static final Duration CAPTURE_POLL = Duration.ofMillis(20);
    static final Duration RECONCILIATION = Duration.ofSeconds(10);
    static final int WORKERS = 2;

    private final BenchDatabase db;
    private final Brokers brokers;
    private final OutboxStore store;
    private final PrintStream out;
    private final OutboxWriter<Connection> writer;

    Latency(BenchDatabase db, Brokers brokers, OutboxStore store, PrintStream out) {
        this.db = db;
        this.brokers = brokers;
        this.store = store;
        this.out = out;
        this.writer = db.outbox.writer();
    }

    /**
     * Mode {@code polling} with {@code interval} as the poll interval, or {@code capture}: the idle cost over
     * {@code idleWindow} (skipped when null), then each rate after a warm-up.
     */
    Map<String, Object> run(String mode, Duration interval, int[] rates, Duration idleWindow, Duration warmup,
                            Duration measure) throws Exception {
        return run(mode, interval, rates, idleWindow, warmup, measure, DeliverySettings.DEFAULT_PIPELINE_DEPTH);
    }

    /** The same with a pipeline depth of the caller's; a depth other than the default is named in the system. */
    Map<String, Object> run(String mode, Duration interval, int[] rates, Duration idleWindow, Duration warmup,
                            Duration measure, int pipelineDepth) throws Exception {
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("mode", mode);
        result.put("system", switch (mode) {
            case "capture" -> "QueueBox capture";
            case "notify" -> "QueueBox notify";
            case "after-commit" -> "QueueBox after-commit wake";
            default -> "QueueBox polling " + interval.toMillis() + " ms";
        } + (pipelineDepth == DeliverySettings.DEFAULT_PIPELINE_DEPTH ? "" : ", pipelineDepth " + pipelineDepth));
        result.put("pipelineDepth", pipelineDepth);
        result.put("wakeIntervalMs", interval.toMillis());
        db.reset();
        brokers.purgeQueue();
        List<WakeSource> sources = new ArrayList<>();
        CaptureSupervisor supervisor = null;
        Path stateDir = null;
        if (mode.equals("capture")) {
            db.prepareCapture();
            stateDir = Files.createTempDirectory("queuebox-bench-capture-");
            supervisor = supervisor(stateDir);
            sources.add(supervisor);
            result.put("capturePollMs", CAPTURE_POLL.toMillis());
        }
        if (mode.equals("notify")) {
            // The V4 trigger is created disabled; notify mode switches it on for the run (queuebox migrate does
            // the same for outbox.wake.mode: notify) and off again afterwards.
            db.outbox.insertNotifications(true);
            sources.add(new InsertNotificationWakeSource(db.outbox.insertNotifications(
                    DedicatedConnectionLock.ConnectionFactory.fromUrl(db.url(db.database), new java.util.Properties()))
                    .orElseThrow()));
        }
        Map<String, Long> consumed = new ConcurrentHashMap<>();
        Channel consumer = brokers.consume((id, headers) -> consumed.putIfAbsent(id, System.nanoTime()));
        MessagePublisher publisher = brokers.relayPublisher("rabbitmq");
        Relay relay = new Relay(store, publisher, Relay.settings(true, WORKERS, 500, interval, pipelineDepth), sources);
        try {
            relay.start();
            if (supervisor != null) {
                awaitCaptureRunning(supervisor);
            }
            Thread.sleep(2000);
            if (idleWindow != null) {
                long statements0 = db.statementsExecuted();
                long xacts0 = db.transactionsCommitted();
                long t0 = System.nanoTime();
                Thread.sleep(idleWindow.toMillis());
                long statements = db.statementsExecuted() - statements0;
                double seconds = Brokers.seconds(t0);
                long xacts = db.transactionsCommitted() - xacts0;
                Map<String, Object> idle = new LinkedHashMap<>();
                idle.put("windowSeconds", round(seconds, 1));
                idle.put("relayStatementsPerSecond", round(statements / seconds, 3));
                idle.put("relayStatementsPerWakeInterval", round(statements / seconds * interval.toMillis() / 1000.0, 2));
                idle.put("databaseTransactionsPerSecond", round(xacts / seconds, 3));
                result.put("idle", idle);
                out.printf("  idle %-8s interval=%5d ms: %.2f relay statements/s (%.2f per interval), %.2f transactions/s in the database%n",
                        mode, interval.toMillis(), statements / seconds, statements / seconds * interval.toMillis() / 1000.0, xacts / seconds);
            }
            List<Map<String, Object>> steady = new ArrayList<>();
            for (int rate : rates) {
                // As QueueBox.writeAndCommit and the Spring writer do: the wake-up names the event just committed.
                java.util.function.Consumer<UUID> afterCommit = mode.equals("after-commit") ? relay::wakeFor : id -> { };
                long claims0 = relay.claims.get();
                long empty0 = relay.emptyClaims.get();
                long slow0 = relay.slowClaims.get();
                long claimNanos0 = relay.claimNanos.get();
                Map<String, long[]> byReason0 = relay.claimsByReason();
                CaptureSupervisor capture = supervisor;
                // Asked when events are still unseen at the end of the 10 s window: where they are.
                java.util.function.Supplier<String> diagnostic = () -> db.outboxState()
                        + "; relay delivered=" + relay.delivered.get() + ", failures=" + relay.failures.get()
                        + (relay.lastError.get() == null ? "" : " (last: " + relay.lastError.get() + ")")
                        + (capture == null ? "" : "; capture " + capture.status().state())
                        + "; " + brokers.rabbitDiagnostic();
                Map<String, Object> row = Steady.run((String) result.get("system"), rate, warmup, measure,
                        () -> session(afterCommit), Map.of("consumed", consumed), out, diagnostic, Steady.WINDOW,
                        Steady.EXTENDED_WAIT).get("consumed");
                // Claims over the warm-up and the measured seconds: the share that found nothing (a wake-up whose
                // rows another worker had taken, or a poll of an empty table).
                long claims = relay.claims.get() - claims0;
                long empty = relay.emptyClaims.get() - empty0;
                row.put("claims", claims);
                row.put("emptyClaims", empty);
                row.put("emptyClaimsPercent", claims == 0 ? null : round(100.0 * empty / claims, 1));
                long slow = relay.slowClaims.get() - slow0;
                double claimMillisMean = claims == 0 ? 0 : (relay.claimNanos.get() - claimNanos0) / 1e6 / claims;
                row.put("claimsOver20Ms", slow);
                row.put("claimMillisMean", round(claimMillisMean, 2));
                Map<String, String> byReason = new java.util.TreeMap<>();
                relay.claimsByReason().forEach((reason, counts) -> {
                    long[] before = byReason0.getOrDefault(reason, new long[2]);
                    if (counts[0] > before[0]) {
                        byReason.put(reason, (counts[0] - before[0]) + " claims, " + (counts[1] - before[1]) + " empty");
                    }
                });
                row.put("claimsByWakeReason", byReason);
                out.printf("      claims %d, empty %d (%.1f %%), mean %.2f ms, %d over 20 ms; by wake-up: %s%n", claims, empty,
                        claims == 0 ? 0.0 : 100.0 * empty / claims, claimMillisMean, slow, byReason);
                steady.add(row);
            }
            result.put("steady", steady);
            if (supervisor != null) {
                result.put("captureStatus", supervisor.status().state().name());
            }
            return result;
        } finally {
            relay.close();
            publisher.close();
            consumer.close();
            if (mode.equals("notify")) {
                db.outbox.insertNotifications(false);
            }
            if (supervisor != null) {
                supervisor.close();
                db.dropSlot();
                db.execute("DROP PUBLICATION IF EXISTS " + BenchDatabase.PUBLICATION);
            }
            if (stateDir != null) {
                try (var files = Files.walk(stateDir)) {
                    files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
                }
            }
        }
    }

    /** A producer as applications write: the QueueBox writer inside the application's own transaction. */
    private Steady.Session session(java.util.function.Consumer<UUID> afterCommit) throws Exception {
        Connection connection = db.dataSource().getConnection();
        connection.setAutoCommit(false);
        return new Steady.Session() {
            @Override
            public void commitOne(long index, Steady.Committed committed) throws Exception {
                UUID id = UUID.randomUUID();
                String aggregate = "agg-" + ThreadLocalRandom.current().nextInt(1000);
                java.time.Instant now = java.time.Instant.now();
                long epochMicros = now.getEpochSecond() * 1_000_000 + now.getNano() / 1000;
                OutboxEvent event = new OutboxEvent(id, "order", aggregate, "BenchEvent", null, Brokers.payload((int) index),
                        OutboxEvent.DEFAULT_CONTENT_TYPE, Map.of(COMMIT_HEADER, Long.toString(epochMicros)));
                writer.enqueue(connection, event);
                connection.commit();
                committed.at(id.toString(), System.nanoTime());
                afterCommit.accept(id);
            }

            @Override
            public void close() throws Exception {
                connection.close();
            }
        };
    }

    private CaptureSupervisor supervisor(Path stateDir) {
        CaptureSettings settings = new CaptureSettings(true, CaptureMode.POSTGRES_LOGICAL,
                new CaptureFingerprint(BenchDatabase.SLOT, BenchDatabase.PUBLICATION, db.table.schema(),
                        db.table.table(), db.host, db.database), db.port, stateDir.toString(), RECONCILIATION);
        return CaptureSupervisor.builder().settings(settings)
                .stateStore(db.outbox.captureStateStore())
                .stateDirectory(new FileCaptureStateDirectory(stateDir))
                .lock(db.outbox.captureLock())
                .inspector(db.outbox.captureSourceInspector())
                .connectors(DebeziumCapture.builder().credentials(db.user, "").pollInterval(CAPTURE_POLL).build())
                .build();
    }

    private static void awaitCaptureRunning(CaptureSupervisor supervisor) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
        while (supervisor.status().state() != CaptureStatus.State.RUNNING) {
            if (System.nanoTime() > deadline || supervisor.status().state() == CaptureStatus.State.FAULT) {
                throw new IllegalStateException("capture did not start: " + supervisor.status());
            }
            Thread.sleep(100);
        }
    }

    static double round(double value, int digits) {
        double scale = Math.pow(10, digits);
        return Math.round(value * scale) / scale;
    }
}
