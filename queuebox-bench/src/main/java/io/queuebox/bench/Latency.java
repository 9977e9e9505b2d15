package io.queuebox.bench;

import com.rabbitmq.client.Channel;
import io.queuebox.capture.DebeziumCapture;
import io.queuebox.capture.FileCaptureStateDirectory;
import io.queuebox.domain.CaptureStatus;
import io.queuebox.domain.CaptureSupervisor;
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
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

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

    /** Mode {@code polling} with {@code interval} as the poll interval, or {@code capture}. */
    Map<String, Object> run(String mode, Duration interval, int[] rates, Duration idleWindow, Duration measure) throws Exception {
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("mode", mode);
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
        Map<String, Long> consumed = new ConcurrentHashMap<>();
        Channel consumer = brokers.consume((id, headers) -> consumed.putIfAbsent(id, System.nanoTime()));
        MessagePublisher publisher = brokers.relayPublisher("rabbitmq");
        Relay relay = new Relay(store, publisher, Relay.settings(true, WORKERS, 500, interval), sources);
        try {
            relay.start();
            if (supervisor != null) {
                awaitCaptureRunning(supervisor);
            }
            Thread.sleep(2000);
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
            List<Map<String, Object>> steady = new ArrayList<>();
            for (int rate : rates) {
                steady.add(steady(rate, measure, consumed));
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

    private Map<String, Object> steady(int rate, Duration measure, Map<String, Long> consumed) throws Exception {
        long warmupNanos = Duration.ofSeconds(1).toNanos();
        long totalNanos = warmupNanos + measure.toNanos();
        int threads = Math.max(2, Math.min(8, rate / 100));
        Map<String, Long> committed = new ConcurrentHashMap<>();
        AtomicLong next = new AtomicLong();
        AtomicReference<Exception> failure = new AtomicReference<>();
        long start = System.nanoTime();
        List<Thread> producers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Thread producer = new Thread(() -> produce(rate, start, totalNanos, warmupNanos, next, committed, failure),
                    "bench-producer-" + t);
            producers.add(producer);
            producer.start();
        }
        for (Thread producer : producers) {
            producer.join();
        }
        if (failure.get() != null) {
            throw failure.get();
        }
        double produceSeconds = Brokers.seconds(start) - warmupNanos / 1e9;
        long drainDeadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (System.nanoTime() < drainDeadline && !consumed.keySet().containsAll(committed.keySet())) {
            Thread.sleep(20);
        }
        long[] latencies = committed.entrySet().stream()
                .filter(e -> consumed.containsKey(e.getKey()))
                .mapToLong(e -> consumed.get(e.getKey()) - e.getValue()).sorted().toArray();
        long lost = committed.size() - latencies.length;
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("targetPerSecond", rate);
        row.put("achievedPerSecond", Math.round(committed.size() / produceSeconds));
        row.put("events", committed.size());
        row.put("notConsumedWithin10s", lost);
        row.put("p50Ms", percentile(latencies, 0.50));
        row.put("p99Ms", percentile(latencies, 0.99));
        row.put("p999Ms", percentile(latencies, 0.999));
        row.put("maxMs", latencies.length == 0 ? null : round(latencies[latencies.length - 1] / 1e6, 1));
        out.printf("    steady %5d/s (achieved %5d/s, %6d events): p50 %7.1f ms  p99 %7.1f ms  p99.9 %7.1f ms%s%n",
                rate, row.get("achievedPerSecond"), committed.size(), row.get("p50Ms"), row.get("p99Ms"), row.get("p999Ms"),
                lost == 0 ? "" : "  (" + lost + " not consumed)");
        consumed.clear();
        return row;
    }

    private void produce(int rate, long start, long totalNanos, long warmupNanos, AtomicLong next,
                         Map<String, Long> committed, AtomicReference<Exception> failure) {
        double gap = 1e9 / rate;
        try (Connection connection = db.dataSource().getConnection()) {
            connection.setAutoCommit(false);
            while (failure.get() == null) {
                long index = next.getAndIncrement();
                long due = start + (long) (index * gap);
                if (due - start >= totalNanos || System.nanoTime() - start >= totalNanos) {
                    return; // behind schedule: the achieved rate says so
                }
                long wait = due - System.nanoTime();
                if (wait > 0) {
                    LockSupport.parkNanos(wait);
                }
                UUID id = UUID.randomUUID();
                String aggregate = "agg-" + ThreadLocalRandom.current().nextInt(1000);
                java.time.Instant now = java.time.Instant.now();
                long epochMicros = now.getEpochSecond() * 1_000_000 + now.getNano() / 1000;
                OutboxEvent event = new OutboxEvent(id, "order", aggregate, "BenchEvent", null, Brokers.payload((int) index),
                        OutboxEvent.DEFAULT_CONTENT_TYPE, Map.of(COMMIT_HEADER, Long.toString(epochMicros)));
                writer.enqueue(connection, event);
                connection.commit();
                long committedAt = System.nanoTime();
                if (due - start >= warmupNanos) {
                    committed.put(id.toString(), committedAt);
                }
            }
        } catch (Exception e) {
            failure.compareAndSet(null, e);
        }
    }

    static Double percentile(long[] sortedNanos, double q) {
        if (sortedNanos.length == 0) {
            return null;
        }
        int index = (int) Math.min(sortedNanos.length - 1, Math.ceil(q * sortedNanos.length) - 1);
        return round(sortedNanos[Math.max(0, index)] / 1e6, 1);
    }

    static double round(double value, int digits) {
        double scale = Math.pow(10, digits);
        return Math.round(value * scale) / scale;
    }
}
