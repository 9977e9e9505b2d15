package io.queuebox.bench;

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Producers committing one event per transaction at a fixed rate, and the latency from each commit to the moment
 * an observer saw the event ({@code System.nanoTime()} on both sides, same JVM). What commits in the warm-up of each
 * rate (at least {@code warmup}, longer while the JIT compilers are busy) is produced but not measured, however far
 * behind the rate's schedule the producers are. Whoever commits (the QueueBox writer, a plain INSERT, gruelbox's schedule) plugs in as a {@link Producer};
 * whoever observes (the RabbitMQ consumer, Debezium's handler) fills a map of event id to nanoTime.
 */
final class Steady {

    /** One producer thread's connection to the system under test. */
    interface Session extends AutoCloseable {
        /**
         * Commits one event in its own transaction and calls {@code committed} with its id and the
         * {@code System.nanoTime()} right after the commit returned.
         */
        void commitOne(long index, Committed committed) throws Exception;

        @Override
        void close() throws Exception;
    }

    interface Committed {
        void at(String id, long nanoTime);
    }

    interface Producer {
        Session open() throws Exception;
    }

    private Steady() {
    }

    /** How long every measured event has to reach every observer for the latency figures. */
    static final Duration WINDOW = Duration.ofSeconds(10);
    /** JIT compile time per second under which a warm-up counts as settled. */
    static final long SETTLED_COMPILE_MS_PER_SECOND = 50;
    /** How much longer a warm-up grows at a time, and the span its compile time is read over. */
    static final Duration WARMUP_STEP = Duration.ofSeconds(1);
    /** The longest warm-up, settled or not, unless the command line says otherwise ({@link #maxWarmup(Duration)}). */
    static final Duration MAX_WARMUP = Duration.ofSeconds(30);
    private static volatile Duration maxWarmup = MAX_WARMUP;
    /** How much longer the bench waits, after {@link #WINDOW}, for events that were not seen in it. */
    static final Duration EXTENDED_WAIT = Duration.ofSeconds(120);

    /** The run below without a diagnostic, with the default windows (10 s, then 120 s more). */
    static Map<String, Map<String, Object>> run(String label, int rate, Duration warmup, Duration measure, Producer producer,
                                                Map<String, Map<String, Long>> observers, PrintStream out) throws Exception {
        return run(label, rate, warmup, measure, producer, observers, out, null, WINDOW, EXTENDED_WAIT);
    }

    /**
     * Runs {@code rate} events per second for {@code warmup + measure}, waits up to {@code window} (10 s in the
     * bench) for every measured event to reach every observer, and answers one row per observer (in the order of
     * {@code observers}). The percentiles and {@code notConsumedWithin10s} are over what was seen within the window.
     * When something is still unseen at the end of the window, {@code diagnostic} (if given; should it throw, the
     * failure is recorded in its place) is asked once what the system under test looks like, and the run waits up
     * to {@code extendedWait} more: each row then says how many events arrived after the window ({@code seenLate}), how many never arrived
     * ({@code neverSeen}), and when the last measured event arrived, in ms after the end of production
     * ({@code lastSeenAfterEndMs}, null while any is missing).
     */
    static Map<String, Map<String, Object>> run(String label, int rate, Duration warmup, Duration measure, Producer producer,
                                                Map<String, Map<String, Long>> observers, PrintStream out,
                                                Supplier<String> diagnostic, Duration window, Duration extendedWait)
            throws Exception {
        long measureNanos = measure.toNanos();
        int threads = Math.max(2, Math.min(8, rate / 100));
        Map<String, Long> committed = new ConcurrentHashMap<>();
        AtomicLong next = new AtomicLong();
        AtomicLong produced = new AtomicLong();
        AtomicReference<Exception> failure = new AtomicReference<>();
        // When the measured part begins, in ns after start: unknown until a warm-up that may grow has ended (warmUp).
        AtomicLong measuredFrom = new AtomicLong(grows(warmup) ? Long.MAX_VALUE : warmup.toNanos());
        long start = System.nanoTime();
        List<Thread> producers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Thread thread = new Thread(() -> {
                double gap = 1e9 / rate;
                try (Session session = producer.open()) {
                    while (failure.get() == null) {
                        long index = next.getAndIncrement();
                        long due = start + (long) (index * gap);
                        long from = measuredFrom.get();
                        if (from != Long.MAX_VALUE
                                && (due - start >= from + measureNanos || System.nanoTime() - start >= from + measureNanos)) {
                            return; // behind schedule: the achieved rate says so
                        }
                        long wait = due - System.nanoTime();
                        if (wait > 0) {
                            LockSupport.parkNanos(wait);
                        }
                        // By when the commit starts, not by its place in the schedule: producers slower than the
                        // rate never reach the schedule's measured part.
                        from = measuredFrom.get();
                        boolean measured = from != Long.MAX_VALUE && Math.max(due, System.nanoTime()) - start >= from;
                        session.commitOne(index, (id, at) -> {
                            if (measured) {
                                committed.put(id, at);
                            }
                        });
                        produced.incrementAndGet();
                    }
                } catch (Exception e) {
                    failure.compareAndSet(null, e);
                }
            }, "bench-producer-" + t);
            producers.add(thread);
            thread.start();
        }
        // CPU from the end of the warm-up (JIT, pools and connections settle in it) to the last event seen.
        long warmedNanos = warmUp(start, warmup, failure);
        measuredFrom.set(warmedNanos);
        Cpu cpu = Cpu.start();
        for (Thread thread : producers) {
            thread.join();
        }
        if (failure.get() != null) {
            throw failure.get();
        }
        long productionEnd = System.nanoTime();
        double produceSeconds = Brokers.seconds(start) - warmedNanos / 1e9;
        long windowDeadline = productionEnd + window.toNanos();
        while (System.nanoTime() < windowDeadline && !allSeen(observers, committed)) {
            Thread.sleep(5);
        }
        // An event counts as seen in the window when its observer's timestamp is at or before this instant.
        long windowEnd = System.nanoTime();
        Double cpuMs = cpu.msPerThousand(committed.size());
        Double cpuAboveIdle = cpu.msPerThousandAboveIdle(committed.size());
        Long compileMs = cpu.compileMillisSinceStart();
        boolean extended = !allSeen(observers, committed);
        String diagnosis = null;
        if (extended) {
            diagnosis = diagnose(diagnostic);
            long extendedDeadline = windowEnd + extendedWait.toNanos();
            while (System.nanoTime() < extendedDeadline && !allSeen(observers, committed)) {
                Thread.sleep(20);
            }
        }
        Map<String, Map<String, Object>> rows = new LinkedHashMap<>();
        for (Map.Entry<String, Map<String, Long>> observer : observers.entrySet()) {
            Map<String, Long> seen = Map.copyOf(observer.getValue());
            long[] latencies = committed.entrySet().stream()
                    .filter(e -> seen.containsKey(e.getKey()) && seen.get(e.getKey()) - windowEnd <= 0)
                    .mapToLong(e -> seen.get(e.getKey()) - e.getValue()).sorted().toArray();
            long lost = committed.size() - latencies.length;
            long everSeen = committed.keySet().stream().filter(seen::containsKey).count();
            long never = committed.size() - everSeen;
            Long lastSeenAfterEndMs = null;
            if (never == 0) {
                long last = committed.keySet().stream().mapToLong(seen::get).max().orElse(productionEnd);
                lastSeenAfterEndMs = Math.max(0, Math.round((last - productionEnd) / 1e6));
            }
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("targetPerSecond", rate);
            row.put("achievedPerSecond", Math.round(committed.size() / produceSeconds));
            row.put("events", committed.size());
            row.put("notConsumedWithin10s", lost);
            row.put("seenLate", lost - never);
            row.put("neverSeen", never);
            row.put("lastSeenAfterEndMs", lastSeenAfterEndMs);
            if (extended) {
                row.put("diagnosticAtWindowEnd", diagnosis);
            }
            row.put("p50Ms", percentile(latencies, 0.50));
            row.put("p99Ms", percentile(latencies, 0.99));
            row.put("p999Ms", percentile(latencies, 0.999));
            row.put("maxMs", latencies.length == 0 ? null : Stats.round(latencies[latencies.length - 1] / 1e6, 1));
            row.put("cpuMsPer1000", cpuMs);
            row.put("cpuAboveIdleMsPer1000", cpuAboveIdle);
            row.put("warmupSeconds", Stats.round(warmedNanos / 1e9, 1));
            row.put("jitCompileMs", compileMs);
            rows.put(observer.getKey(), row);
            out.printf(Locale.ROOT, "    %-28s %5d/s (achieved %5d/s, %6d events): p50 %7.1f ms  p99 %7.1f ms  p99.9 %7.1f ms  cpu %s ms/1000 (%s above idle)  warm-up %s s, jit %s ms%s%n",
                    label + (observers.size() > 1 ? " " + observer.getKey() : ""), rate, row.get("achievedPerSecond"),
                    committed.size(), row.get("p50Ms"), row.get("p99Ms"), row.get("p999Ms"), cpuMs, cpuAboveIdle,
                    row.get("warmupSeconds"), compileMs,
                    lost == 0 ? "" : String.format(Locale.ROOT, "  (%d not seen in %d ms: %d seen late%s, %d never in a further %d ms)",
                            lost, window.toMillis(), lost - never,
                            lastSeenAfterEndMs == null ? "" : ", the last " + lastSeenAfterEndMs + " ms after the end of production",
                            never, extendedWait.toMillis()));
            if (lost != 0 && diagnosis != null) {
                out.println("      at the end of the window: " + diagnosis);
            }
        }
        observers.values().forEach(Map::clear);
        return rows;
    }

    /**
     * Waits out the warm-up: at least {@code minimum}, then on in steps of a second while the JVM's JIT compilers spent
     * {@link #SETTLED_COMPILE_MS_PER_SECOND} ms or more in the last second, up to {@link #maxWarmup(Duration)}. Measured while
     * they still compile, a cell shares the machine with them: on this 2-core machine, in the first seconds of a cell
     * whose code had not run before in the JVM, they took half a core. A warm-up shorter than the one-second step is
     * taken as it is. Answers the warm-up's length in ns.
     */
    private static long warmUp(long start, Duration minimum, AtomicReference<Exception> failure) {
        return warmUp(start, minimum, maxWarmup, failure::get, Cpu::compileMillis);
    }

    /**
     * {@link #warmUp(long, Duration, AtomicReference)} with its limit and its sources given: {@code failed} (non-null
     * ends the warm-up), and {@code compileMillis}, the JIT compilers' total so far (negative when unknown).
     */
    static long warmUp(long start, Duration minimum, Duration maximum, Supplier<?> failed, LongSupplier compileMillis) {
        long step = WARMUP_STEP.toNanos();
        if (!grows(minimum)) {
            LockSupport.parkNanos(Math.max(0, start + minimum.toNanos() - System.nanoTime()));
            return minimum.toNanos();
        }
        LockSupport.parkNanos(Math.max(0, start + minimum.toNanos() - step - System.nanoTime()));
        long before = compileMillis.getAsLong();
        LockSupport.parkNanos(Math.max(0, start + minimum.toNanos() - System.nanoTime()));
        while (failed.get() == null && System.nanoTime() - start < maximum.toNanos()) {
            long now = compileMillis.getAsLong();
            if (now < 0 || before < 0 || now - before < SETTLED_COMPILE_MS_PER_SECOND) {
                break;
            }
            before = now;
            LockSupport.parkNanos(step);
        }
        return System.nanoTime() - start;
    }

    /** Whether a warm-up of at least {@code minimum} may grow: not one shorter than a step (the tests' warm-ups). */
    private static boolean grows(Duration minimum) {
        return minimum.compareTo(WARMUP_STEP) >= 0;
    }

    /** Sets the longest warm-up of every later run, for the whole bench (the smoke run keeps it at its minimum). */
    static void maxWarmup(Duration longest) {
        maxWarmup = longest;
    }

    /** The diagnostic's answer; a failure of its own is named in it rather than failing the run. */
    static String diagnose(Supplier<String> diagnostic) {
        if (diagnostic == null) {
            return null;
        }
        try {
            return diagnostic.get();
        } catch (RuntimeException e) {
            return "diagnostic failed: " + e;
        }
    }

    private static boolean allSeen(Map<String, Map<String, Long>> observers, Map<String, Long> committed) {
        return observers.values().stream().allMatch(seen -> seen.keySet().containsAll(committed.keySet()));
    }

    static Double percentile(long[] sortedNanos, double q) {
        if (sortedNanos.length == 0) {
            return null;
        }
        int index = (int) Math.min(sortedNanos.length - 1, Math.ceil(q * sortedNanos.length) - 1);
        return Stats.round(sortedNanos[Math.max(0, index)] / 1e6, 1);
    }
}
