package io.queuebox.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class SteadyTest {

    private static final Duration WINDOW = Duration.ofMillis(200);
    private static final Duration EXTENDED = Duration.ofMillis(2000);

    /** Commits e0, e1 and e2 (indexes 0-2; later indexes commit nothing), handing each id to {@code onCommit}. */
    private static Steady.Producer producer(java.util.function.BiConsumer<String, Long> onCommit) {
        return () -> new Steady.Session() {
            @Override
            public void commitOne(long index, Steady.Committed committed) {
                if (index < 3) {
                    String id = "e" + index;
                    long at = System.nanoTime();
                    committed.at(id, at);
                    onCommit.accept(id, at);
                }
            }

            @Override
            public void close() {
            }
        };
    }

    @Test
    void anEventSeenAfterTheWindowIsLateAndOneNeverSeenIsCountedApart() throws Exception {
        Map<String, Long> seen = new ConcurrentHashMap<>();
        long start = System.nanoTime();
        Thread late = new Thread(() -> {
            // Production ends about 500 ms after the start and the window 200 ms later: 1,200 ms is 500 ms after it
            // and 1,500 ms before the end of the extended wait.
            long wait = start + Duration.ofMillis(1200).toNanos() - System.nanoTime();
            try {
                Thread.sleep(Math.max(0, wait / 1_000_000));
            } catch (InterruptedException e) {
                return;
            }
            seen.put("e1", System.nanoTime());
        });
        late.start();
        AtomicInteger diagnosed = new AtomicInteger();
        Map<String, Object> row = Steady.run("fake", 10, Duration.ZERO, Duration.ofMillis(500), producer((id, at) -> {
                    if (id.equals("e0")) {
                        seen.put(id, System.nanoTime());
                    }
                }), Map.of("seen", seen), quiet(), () -> "pending=" + diagnosed.incrementAndGet(), WINDOW, EXTENDED)
                .get("seen");
        late.join();

        assertThat(row).containsEntry("events", 3)
                .containsEntry("notConsumedWithin10s", 2L)
                .containsEntry("seenLate", 1L)
                .containsEntry("neverSeen", 1L)
                .containsEntry("diagnosticAtWindowEnd", "pending=1");
        assertThat(row.get("lastSeenAfterEndMs")).isNull();
        // The percentiles are over the one event seen in the window.
        assertThat(row.get("p50Ms")).isNotNull();
        assertThat(diagnosed).hasValue(1);
    }

    @Test
    void whenEverythingIsSeenInTheWindowThereIsNoExtendedWaitAndNoDiagnostic() throws Exception {
        Map<String, Long> seen = new ConcurrentHashMap<>();
        AtomicInteger diagnosed = new AtomicInteger();
        long start = System.nanoTime();
        Map<String, Object> row = Steady.run("fake", 10, Duration.ZERO, Duration.ofMillis(500),
                        producer((id, at) -> seen.put(id, System.nanoTime())), Map.of("seen", seen), quiet(),
                        () -> "pending=" + diagnosed.incrementAndGet(), WINDOW, Duration.ofSeconds(30))
                .get("seen");

        assertThat(row).containsEntry("events", 3)
                .containsEntry("notConsumedWithin10s", 0L)
                .containsEntry("seenLate", 0L)
                .containsEntry("neverSeen", 0L)
                .doesNotContainKey("diagnosticAtWindowEnd");
        assertThat(row.get("lastSeenAfterEndMs")).isNotNull();
        assertThat(diagnosed).hasValue(0);
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(30));
    }

    /**
     * Producers slower than the rate fall behind its schedule: the warm-up is a span of time, not the first indexes of
     * the schedule, or they never reach the measured part (the notify cell at 5,000/s reported 0 events while its
     * producers committed about 600 a second).
     */
    @Test
    void producersBehindTheScheduleAreMeasuredAfterTheWarmUpsTimeNotItsIndexes() throws Exception {
        Map<String, Long> seen = new ConcurrentHashMap<>();
        AtomicInteger commits = new AtomicInteger();
        // 200/s asks for 2 threads; each commit takes 50 ms, so they reach at most 40/s: in the 300 ms of warm-up the
        // schedule's first 60 indexes are not reached, nor in the whole second.
        Steady.Producer slow = () -> new Steady.Session() {
            @Override
            public void commitOne(long index, Steady.Committed committed) throws InterruptedException {
                Thread.sleep(50);
                String id = "e" + index;
                long at = System.nanoTime();
                commits.incrementAndGet();
                committed.at(id, at);
                seen.put(id, at);
            }

            @Override
            public void close() {
            }
        };

        Map<String, Object> row = Steady.run("slow", 200, Duration.ofMillis(300), Duration.ofMillis(700), slow,
                Map.of("seen", seen), quiet(), null, WINDOW, EXTENDED).get("seen");

        assertThat((Integer) row.get("events")).isPositive().isLessThan(commits.get());
        assertThat((Long) row.get("achievedPerSecond")).isBetween(1L, 45L);
        assertThat(row).containsEntry("notConsumedWithin10s", 0L);
    }

    @Test
    void aDiagnosticThatThrowsIsNamedNotThrown() {
        assertThat(Steady.diagnose(() -> {
            throw new IllegalStateException("no database");
        })).contains("no database");
        assertThat(Steady.diagnose(null)).isNull();
    }

    private static PrintStream quiet() {
        return new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
    }

    /** The warm-up grows while the compilers are busy, by whole steps, and stops once a step saw them settle. */
    @Test
    void aWarmUpGrowsWhileTheJitCompilersAreBusyAndStopsOnceTheySettle() {
        long start = System.nanoTime();
        // Busy (100 ms of compiling per second) for the first 2.5 s, then idle.
        java.util.function.LongSupplier compiling = () -> {
            long elapsedMillis = (System.nanoTime() - start) / 1_000_000;
            return Math.min(elapsedMillis, 2500) / 10;
        };

        long warmed = Steady.warmUp(start, Duration.ofSeconds(1), Duration.ofSeconds(30), () -> null, compiling);

        // Read at 1 s (busy), 2 s (busy), 3 s (500 ms into the quiet: still 50 ms compiled in that step), 4 s (quiet).
        assertThat(Duration.ofNanos(warmed)).isBetween(Duration.ofMillis(3900), Duration.ofMillis(4800));
    }

    @Test
    void aWarmUpEndsAtItsLimitWhenTheCompilersNeverSettleAndAtOnceWithoutACompileClock() {
        long start = System.nanoTime();
        java.util.function.LongSupplier alwaysBusy = () -> (System.nanoTime() - start) / 1_000_000;

        long capped = Steady.warmUp(start, Duration.ofSeconds(1), Duration.ofMillis(2500), () -> null, alwaysBusy);
        long unknown = Steady.warmUp(System.nanoTime(), Duration.ofSeconds(1), Duration.ofSeconds(30), () -> null, () -> -1);

        assertThat(Duration.ofNanos(capped)).isBetween(Duration.ofMillis(2500), Duration.ofMillis(3400));
        assertThat(Duration.ofNanos(unknown)).isBetween(Duration.ofMillis(1000), Duration.ofMillis(1400));
    }
}
