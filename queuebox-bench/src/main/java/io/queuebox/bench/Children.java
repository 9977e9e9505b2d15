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
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicBoolean;
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

    /**
     * {@code processes} warm relay JVMs draining {@code rows} to RabbitMQ; a consumer counts duplicates. The
     * children start, drain {@code warmupRows} committed before GO (the cold phase: every JVM compiles while
     * it delivers), and once the consumer saw every warm-up row the bench commits the {@code rows} of the
     * measured phase in one INSERT. The warm rate runs from that commit to the last measured row consumed; the
     * cold rate from GO to the last warm-up row consumed. Between the two the sent rows are deleted and the table
     * vacuumed, so that the measured phase finds the same table whatever the number of relays. Duplicates are counted
     * per phase, by the phase in
     * which the consumer first saw the row.
     */
    Map<String, Object> scaleOut(int processes, int warmupRowsPerProcess, int rows, int aggregates, List<String> jvmOptions,
                                 int settleSeconds) throws Exception {
        // As many warm-up rows per JVM as the single relay drains alone: with one total, each of 4 JVMs compiled its
        // hot paths on a quarter of them, and the warm phase measured JIT compilers as much as relays.
        int warmupRows = warmupRowsPerProcess * processes;
        db.reset();
        db.fill(warmupRows, aggregates);
        brokers.purgeQueue();
        Map<String, Boolean> firstSeenMeasured = new ConcurrentHashMap<>();
        AtomicBoolean measuring = new AtomicBoolean();
        AtomicInteger warmupDistinct = new AtomicInteger();
        AtomicInteger warmupDuplicates = new AtomicInteger();
        AtomicInteger distinct = new AtomicInteger();
        AtomicInteger duplicates = new AtomicInteger();
        Object progress = new Object();
        Channel consumer = brokers.consume((id, headers) -> {
            boolean now = measuring.get();
            Boolean measured = firstSeenMeasured.putIfAbsent(id, now);
            if (measured == null) {
                (now ? distinct : warmupDistinct).incrementAndGet();
            } else {
                (measured ? duplicates : warmupDuplicates).incrementAndGet();
            }
            if (now ? distinct.get() >= rows : warmupDistinct.get() >= warmupRows) {
                synchronized (progress) {
                    progress.notifyAll();
                }
            }
        });
        List<Child> children = new ArrayList<>();
        try {
            List<String> options = new ArrayList<>(List.of("-Xmx256m"));
            options.addAll(jvmOptions);
            for (int i = 0; i < processes; i++) {
                children.add(Child.start(db, brokers, "rabbitmq", 2, 500, true, 0, options));
            }
            long go = System.nanoTime();
            long[] machineAtGo = MachineCpu.jiffies();
            children.forEach(Child::go);
            awaitCount(progress, warmupDistinct, warmupRows);
            double coldSeconds = Brokers.seconds(go);
            int coldConsumed = warmupDistinct.get();
            Double coldMachineBusy = MachineCpu.busyPercent(machineAtGo, MachineCpu.jiffies());
            if (warmupDistinct.get() < warmupRows) {
                throw new IllegalStateException("scale-out warm-up: only " + warmupDistinct.get() + " of " + warmupRows + " consumed");
            }
            Settling settling = settle(children, progress, warmupDistinct, warmupRows, aggregates, settleSeconds);
            long warmedRows = warmupRows + settling.rows();
            // Delivered counts from before the INSERT: no row of the measured phase exists yet, so they are exact
            // once the relays recorded the last warm-up batches (the consumer may see a row before its relay does).
            List<Map<String, Object>> before = marks(children);
            for (long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
                 before.stream().mapToLong(m -> longOf(m, "delivered")).sum() < warmedRows && System.nanoTime() < until; ) {
                Thread.sleep(20);
                before = marks(children);
            }
            // Four relays' warm-up leaves four times the sent rows, and the dead index entries of their updates: the
            // measured phase would run on a different table for each number of relays (with 150,000 warm-up rows per
            // relay, four relays' claims took 490-900 ms each where one relay's took 33). Every phase starts on the
            // outbox a purge and vacuum leave.
            db.purgeSentAndVacuum();
            // Whatever the consumer sees first from now on is a row of the measured phase.
            measuring.set(true);
            long[] machineBefore = MachineCpu.jiffies();
            db.insert(rows, aggregates);
            long committed = System.nanoTime();
            // Claims from right after the commit, so the idle polls while the INSERT ran are not counted. A MARK
            // round trip on a busy machine can outlast a batch, so delivered counts never come from this one.
            long markStart = System.nanoTime();
            List<Map<String, Object>> afterCommit = marks(children);
            long markMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - markStart);
            db.analyze(); // as fill does; it runs while the relays drain, so its cost is inside the measured time
            awaitCount(progress, distinct, rows);
            double seconds = Brokers.seconds(committed);
            Double machineBusy = MachineCpu.busyPercent(machineBefore, MachineCpu.jiffies());
            List<Map<String, Object>> atEnd = marks(children);
            Thread.sleep(500); // late duplicates, if any, arrive now
            List<Map<String, Object>> results = new ArrayList<>();
            for (Child child : children) {
                child.stop();
                results.add(child.result(2));
            }
            List<Object> warmupPerProcess = new ArrayList<>();
            List<Object> perProcess = new ArrayList<>();
            List<Object> claimsPerProcess = new ArrayList<>();
            List<Object> emptyClaimsPerProcess = new ArrayList<>();
            List<Object> claimMillisPerProcess = new ArrayList<>();
            List<Object> publishMillisPerProcess = new ArrayList<>();
            List<Object> cpuMillisPerProcess = new ArrayList<>();
            List<Object> jitCpuMillisPerProcess = new ArrayList<>();
            List<Object> gcCpuMillisPerProcess = new ArrayList<>();
            long failures = 0;
            for (int i = 0; i < children.size(); i++) {
                warmupPerProcess.add(longOf(before.get(i), "delivered"));
                // Delivered from before the INSERT to the RESULT (after the wait for late duplicates); the rest from
                // the commit to the last row consumed.
                perProcess.add(longOf(results.get(i), "delivered") - longOf(before.get(i), "delivered"));
                claimsPerProcess.add(since(afterCommit.get(i), atEnd.get(i), "claims"));
                emptyClaimsPerProcess.add(since(afterCommit.get(i), atEnd.get(i), "emptyClaims"));
                claimMillisPerProcess.add(since(afterCommit.get(i), atEnd.get(i), "claimMillis"));
                publishMillisPerProcess.add(since(afterCommit.get(i), atEnd.get(i), "publishMillis"));
                cpuMillisPerProcess.add(atEnd.get(i).containsKey("cpuMillis")
                        ? longOf(atEnd.get(i), "cpuMillis") - longOf(afterCommit.get(i), "cpuMillis") : null);
                jitCpuMillisPerProcess.add(atEnd.get(i).containsKey("jitCpuMillis")
                        ? since(afterCommit.get(i), atEnd.get(i), "jitCpuMillis") : null);
                gcCpuMillisPerProcess.add(atEnd.get(i).containsKey("gcCpuMillis")
                        ? since(afterCommit.get(i), atEnd.get(i), "gcCpuMillis") : null);
                failures += longOf(results.get(i), "failures");
            }
            Map<String, Object> result = new LinkedHashMap<>();
            result.put("processes", processes);
            result.put("aggregates", aggregates);
            result.put("warmupRows", warmupRows);
            result.put("coldRowsPerSecond", Math.round(coldConsumed / coldSeconds));
            result.put("settleSeconds", Latency.round(settling.seconds(), 1));
            result.put("settleRows", settling.rows());
            result.put("settleRounds", settling.jitSharePercentPerRound().size());
            result.put("settleJitSharePercentPerRound", settling.jitSharePercentPerRound());
            result.put("settled", settling.settled());
            result.put("warmupDuplicates", warmupDuplicates.get());
            result.put("warmupDeliveredPerProcess", warmupPerProcess);
            result.put("rows", rows);
            result.put("measuredSeconds", Latency.round(seconds, 2));
            result.put("rowsPerSecond", Math.round(distinct.get() / seconds));
            result.put("distinctConsumed", distinct.get());
            result.put("duplicates", duplicates.get());
            result.put("deliveredPerProcess", perProcess);
            result.put("claimsPerProcess", claimsPerProcess);
            result.put("emptyClaimsPerProcess", emptyClaimsPerProcess);
            result.put("claimMillisPerProcess", claimMillisPerProcess);
            result.put("publishMillisPerProcess", publishMillisPerProcess);
            result.put("cpuMillisPerProcess", cpuMillisPerProcess);
            result.put("jitCpuMillisPerProcess", jitCpuMillisPerProcess);
            result.put("gcCpuMillisPerProcess", gcCpuMillisPerProcess);
            result.put("claimsMarkMillisAfterCommit", markMillis);
            result.put("machineBusyPercent", machineBusy);
            result.put("coldMachineBusyPercent", coldMachineBusy);
            result.put("failures", failures);
            if (settleSeconds > 0) {
                out.printf("  scale-out %d process(es): settling %.1f s, %d rows in %d rounds, the busiest JIT's share of its"
                                + " JVM's CPU per round %s %%, %s%n", processes, settling.seconds(), settling.rows(),
                        settling.jitSharePercentPerRound().size(), settling.jitSharePercentPerRound(),
                        settling.settled() ? "settled" : "not settled within " + settleSeconds + " s");
            }
            out.printf("  scale-out %d process(es): cold (GO → %d warm-up rows consumed) %6d rows/s, %d duplicates, per process %s;%n"
                            + "    warm (commit of %d rows → last consumed, %.2f s) %6d rows/s, %d distinct consumed, %d duplicates,"
                            + " per process %s, claims %s (empty %s), claiming ms %s, publishing ms %s, relay JVM CPU ms %s"
                            + " (of it JIT compiler threads %s, GC threads %s); machine busy %s %% (cold %s %%)%n",
                    processes, warmupRows, result.get("coldRowsPerSecond"), warmupDuplicates.get(), warmupPerProcess,
                    rows, seconds, result.get("rowsPerSecond"), distinct.get(), duplicates.get(), perProcess,
                    claimsPerProcess, emptyClaimsPerProcess, claimMillisPerProcess, publishMillisPerProcess, cpuMillisPerProcess,
                    jitCpuMillisPerProcess, gcCpuMillisPerProcess, machineBusy, coldMachineBusy);
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

    /** Below this share of a relay JVM's CPU, its JIT compilers count as settled. */
    private static final double SETTLED_JIT_SHARE = 0.10;

    /** What {@link #settle} did: rows drained, seconds, and per round the busiest JIT's share of its JVM's CPU. */
    record Settling(long rows, double seconds, List<Double> jitSharePercentPerRound, boolean settled) {
    }

    /**
     * Keeps the relays busy until they are minutes old in effect: rounds of {@code roundRows} rows (committed in one
     * INSERT, drained, sent rows purged) until, in the latest round, no relay JVM's JIT compiler threads used
     * {@value #SETTLED_JIT_SHARE} of its CPU or more, or {@code maxSeconds} have passed. A JVM a few seconds old
     * spends most of its CPU compiling (43-74 % in a 40,000-row phase), and each added JVM compiles the same code
     * again: without this the scale-out compares young JVMs more than relays. Nothing when {@code maxSeconds} is 0.
     */
    private Settling settle(List<Child> children, Object progress, AtomicInteger consumed, int consumedSoFar,
                            int aggregates, int maxSeconds) throws Exception {
        List<Double> shares = new ArrayList<>();
        if (maxSeconds <= 0) {
            return new Settling(0, 0, shares, false);
        }
        long start = System.nanoTime();
        long rows = 0;
        int roundRows = Math.max(1, consumedSoFar);
        List<Map<String, Object>> previous = marks(children);
        boolean settled = false;
        while (!settled && System.nanoTime() - start < TimeUnit.SECONDS.toNanos(maxSeconds)) {
            db.purgeSentAndVacuum();
            db.insert(roundRows, aggregates);
            rows += roundRows;
            long target = consumedSoFar + rows;
            awaitCount(progress, consumed, (int) target);
            if (consumed.get() < target) {
                throw new IllegalStateException("scale-out settling: only " + consumed.get() + " of " + target + " consumed");
            }
            List<Map<String, Object>> now = marks(children);
            double busiest = 0;
            for (int i = 0; i < children.size(); i++) {
                if (!now.get(i).containsKey("jitCpuMillis") || !now.get(i).containsKey("cpuMillis")) {
                    throw new IllegalStateException("scale-out settling needs each relay's JIT CPU (Linux /proc): " + now.get(i));
                }
                long cpu = since(previous.get(i), now.get(i), "cpuMillis");
                long jit = since(previous.get(i), now.get(i), "jitCpuMillis");
                busiest = Math.max(busiest, cpu <= 0 ? 0 : (double) jit / cpu);
            }
            shares.add(Latency.round(100 * busiest, 1));
            settled = busiest < SETTLED_JIT_SHARE;
            previous = now;
        }
        return new Settling(rows, (System.nanoTime() - start) / 1e9, shares, settled);
    }

    /** The counters of every child, asked of all at once. */
    private static List<Map<String, Object>> marks(List<Child> children) throws Exception {
        children.forEach(Child::requestMark);
        List<Map<String, Object>> marks = new ArrayList<>();
        for (Child child : children) {
            marks.add(child.awaitMark());
        }
        return marks;
    }

    /** Waits until {@code count} reaches {@code target}, five minutes at most. */
    private static void awaitCount(Object progress, AtomicInteger count, int target) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
        synchronized (progress) {
            while (count.get() < target && System.nanoTime() < deadline) {
                progress.wait(100);
            }
        }
    }

    private static long longOf(Map<String, Object> map, String key) {
        return ((Number) map.get(key)).longValue();
    }

    /** How much the counter {@code key} grew from one mark to a later one. */
    private static long since(Map<String, Object> from, Map<String, Object> to, String key) {
        return longOf(to, key) - longOf(from, key);
    }

    /** One child JVM. */
    static final class Child {
        private final Process process;
        private final PrintWriter stdin;
        private final CompletableFuture<Map<String, Object>> result = new CompletableFuture<>();
        private final LinkedBlockingQueue<Map<String, Object>> marks = new LinkedBlockingQueue<>();
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
                        } else if (line.startsWith("MARK ")) {
                            @SuppressWarnings("unchecked")
                            Map<String, Object> parsed = new ObjectMapper().readValue(line.substring(5), LinkedHashMap.class);
                            child.marks.add(parsed);
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

        /** Asks for the child's counters (see {@link ChildRelay}); {@link #awaitMark()} takes the answer. */
        void requestMark() {
            stdin.println("MARK");
        }

        Map<String, Object> awaitMark() throws Exception {
            Map<String, Object> mark = marks.poll(30, TimeUnit.SECONDS);
            if (mark == null) {
                throw new IllegalStateException("relay child did not answer MARK: " + stderrTail());
            }
            return mark;
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
