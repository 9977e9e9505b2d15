package io.queuebox.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.rabbitmq.client.Channel;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** Workloads 4 and 5: relays in child JVMs started from the bench's own classpath. */
final class Children {

    private final BenchDatabase db;
    private final Brokers brokers;
    private final PrintStream out;

    Children(BenchDatabase db, Brokers brokers, PrintStream out) {
        this.db = db;
        this.brokers = brokers;
        this.out = out;
    }

    /** A backlog of {@code rows} drained by one relay JVM under {@code -Xmx256m}. */
    Map<String, Object> backlog(int rows, String broker) throws Exception {
        db.reset();
        db.fill(rows, 1000);
        Child child = Child.start(db, brokers, broker, 2, 500, true, rows, List.of("-Xmx256m", "-XX:+UseG1GC"));
        child.go();
        Map<String, Object> result = child.result(30);
        child.kill();
        long unsent = db.count("status <> 'sent'");
        result.put("rows", rows);
        result.put("broker", broker);
        result.put("unsentAfter", unsent);
        result.remove("lastError");
        if (unsent != 0 || ((Number) result.get("failures")).longValue() != 0) {
            throw new IllegalStateException("backlog drain incomplete: " + result + "; stderr: " + child.stderrTail());
        }
        out.printf("  backlog %d rows to %s under -Xmx256m: %.1f s, peak heap used %s MiB, peak heap after GC %s MiB, RSS peak %s MiB, %s GCs%n",
                rows, broker, ((Number) result.get("seconds")).doubleValue(), result.get("peakHeapUsedMiB"),
                result.get("peakHeapAfterGcMiB"), result.get("rssPeakMiB"), result.get("gcCount"));
        if (broker.equals("rabbitmq")) {
            brokers.purgeQueue();
        }
        return result;
    }

    /** {@code processes} relay JVMs draining one table of {@code rows} to RabbitMQ; a consumer counts duplicates. */
    Map<String, Object> scaleOut(int processes, int rows) throws Exception {
        db.reset();
        db.fill(rows, 1000);
        brokers.purgeQueue();
        Map<String, AtomicInteger> seen = new ConcurrentHashMap<>();
        AtomicInteger distinct = new AtomicInteger();
        AtomicInteger duplicates = new AtomicInteger();
        Object progress = new Object();
        Channel consumer = brokers.consume((id, headers) -> {
            if (seen.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet() == 1) {
                distinct.incrementAndGet();
            } else {
                duplicates.incrementAndGet();
            }
            if (distinct.get() >= rows) {
                synchronized (progress) {
                    progress.notifyAll();
                }
            }
        });
        List<Child> children = new ArrayList<>();
        try {
            for (int i = 0; i < processes; i++) {
                children.add(Child.start(db, brokers, "rabbitmq", 2, 500, true, 0, List.of("-Xmx256m")));
            }
            long start = System.nanoTime();
            children.forEach(Child::go);
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
            synchronized (progress) {
                while (distinct.get() < rows && System.nanoTime() < deadline) {
                    progress.wait(100);
                }
            }
            double seconds = Brokers.seconds(start);
            Thread.sleep(500); // late duplicates, if any, arrive now
            List<Object> perProcess = new ArrayList<>();
            for (Child child : children) {
                child.stop();
                perProcess.add(child.result(2).get("delivered"));
            }
            Map<String, Object> result = new LinkedHashMap<>();
            result.put("processes", processes);
            result.put("rows", rows);
            result.put("rowsPerSecond", Math.round(distinct.get() / seconds));
            result.put("distinctConsumed", distinct.get());
            result.put("duplicates", duplicates.get());
            result.put("deliveredPerProcess", perProcess);
            out.printf("  scale-out %d process(es), %d rows: %6d rows/s, %d distinct consumed, %d duplicates, per process %s%n",
                    processes, rows, result.get("rowsPerSecond"), distinct.get(), duplicates.get(), perProcess);
            if (distinct.get() < rows) {
                throw new IllegalStateException("scale-out: only " + distinct.get() + " of " + rows + " consumed");
            }
            return result;
        } finally {
            children.forEach(Child::kill);
            consumer.close();
            brokers.purgeQueue();
        }
    }

    /** One child JVM. */
    static final class Child {
        private final Process process;
        private final PrintWriter stdin;
        private final CompletableFuture<Map<String, Object>> result = new CompletableFuture<>();
        private final Path stderr;

        private Child(Process process, Path stderr) {
            this.process = process;
            this.stderr = stderr;
            this.stdin = new PrintWriter(process.getOutputStream(), true, StandardCharsets.UTF_8);
        }

        static Child start(BenchDatabase db, Brokers brokers, String broker, int workers, int batch, boolean ordered,
                           long stopAfter, List<String> jvmOptions) throws Exception {
            List<String> command = new ArrayList<>();
            command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
            command.addAll(jvmOptions);
            command.add("-cp");
            command.add(System.getProperty("java.class.path"));
            command.add(ChildRelay.class.getName());
            command.add(db.url(db.database));
            command.add(broker);
            command.add(brokers.rabbitUri());
            command.add(brokers.hasKafka() ? brokers.kafkaBootstrap() : "-");
            command.add(Integer.toString(workers));
            command.add(Integer.toString(batch));
            command.add(Boolean.toString(ordered));
            command.add(Long.toString(stopAfter));
            Path stderr = Files.createTempFile("queuebox-bench-child-", ".err");
            Process process = new ProcessBuilder(command).redirectError(stderr.toFile()).start();
            Child child = new Child(process, stderr);
            CompletableFuture<Void> ready = new CompletableFuture<>();
            Thread reader = new Thread(() -> {
                try (BufferedReader lines = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                    for (String line = lines.readLine(); line != null; line = lines.readLine()) {
                        if (line.equals("READY")) {
                            ready.complete(null);
                        } else if (line.startsWith("RESULT ")) {
                            @SuppressWarnings("unchecked")
                            Map<String, Object> parsed = new ObjectMapper().readValue(line.substring(7), LinkedHashMap.class);
                            child.result.complete(parsed);
                        }
                    }
                } catch (Exception e) {
                    child.result.completeExceptionally(e);
                }
                ready.completeExceptionally(new IllegalStateException("child exited before READY"));
                child.result.completeExceptionally(new IllegalStateException("child exited without a result"));
            }, "bench-child-reader");
            reader.setDaemon(true);
            reader.start();
            try {
                ready.get(60, TimeUnit.SECONDS);
            } catch (Exception e) {
                child.kill();
                throw new IllegalStateException("relay child did not start: " + child.stderrTail(), e);
            }
            return child;
        }

        void go() {
            stdin.println("GO");
        }

        void stop() {
            stdin.println("STOP");
        }

        Map<String, Object> result(int minutes) throws Exception {
            try {
                return result.get(minutes, TimeUnit.MINUTES);
            } catch (Exception e) {
                throw new IllegalStateException("relay child failed: " + stderrTail(), e);
            }
        }

        String stderrTail() {
            try {
                List<String> lines = Files.readAllLines(stderr);
                return String.join(File.separator.equals("/") ? "\n" : "\r\n",
                        lines.subList(Math.max(0, lines.size() - 20), lines.size()));
            } catch (Exception e) {
                return "(no stderr: " + e + ")";
            }
        }

        void kill() {
            process.destroy();
            try {
                if (!process.waitFor(10, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            try {
                Files.deleteIfExists(stderr);
            } catch (Exception ignored) {
                // a temp file left behind is harmless
            }
        }
    }
}
