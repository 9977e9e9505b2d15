package io.queuebox.embed.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.TimeGauge;
import io.queuebox.ports.BacklogStats;
import io.queuebox.ports.OutboxStore;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Backlog gauges sampled from {@link OutboxStore#stats()} on a schedule. A scrape reads the last sample and
 * never queries the database, so a slow database or an eager scraper cannot slow each other down.
 */
public final class BacklogGauges implements AutoCloseable {

    public static final String PENDING = "queuebox.backlog.pending";
    public static final String LEASED = "queuebox.backlog.leased";
    public static final String PARKED = "queuebox.backlog.parked";
    public static final String OLDEST_PENDING_AGE = "queuebox.backlog.oldest.pending.age";
    public static final String SAMPLE_FAILURES = "queuebox.backlog.sample.failures";

    private final OutboxStore store;
    private final AtomicReference<BacklogStats> last =
            new AtomicReference<>(new BacklogStats(0, 0, 0, Optional.empty()));
    private final Counter failures;
    private final ScheduledExecutorService scheduler;

    private BacklogGauges(OutboxStore store, MeterRegistry registry) {
        this.store = Objects.requireNonNull(store, "store");
        Gauge.builder(PENDING, last, s -> s.get().pending()).description("Rows not yet sent and not parked")
                .baseUnit("rows").register(registry);
        Gauge.builder(LEASED, last, s -> s.get().leased()).description("Pending rows under a live lease")
                .baseUnit("rows").register(registry);
        Gauge.builder(PARKED, last, s -> s.get().parked()).description("Parked rows waiting for an operator")
                .baseUnit("rows").register(registry);
        TimeGauge.builder(OLDEST_PENDING_AGE, last, TimeUnit.MILLISECONDS,
                        s -> s.get().oldestPendingAge().map(Duration::toMillis).orElse(0L))
                .description("Age of the oldest pending row (0 when none)").register(registry);
        failures = Counter.builder(SAMPLE_FAILURES).description("Backlog samples that failed").register(registry);
        scheduler = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread thread = new Thread(runnable, "queuebox-backlog-sampler");
            thread.setDaemon(true);
            return thread;
        });
    }

    /** Registers the gauges, samples once now and then every {@code interval}. */
    public static BacklogGauges start(OutboxStore store, MeterRegistry registry, Duration interval) {
        BacklogGauges gauges = new BacklogGauges(store, registry);
        gauges.scheduler.scheduleWithFixedDelay(gauges::sample, 0, interval.toMillis(), TimeUnit.MILLISECONDS);
        return gauges;
    }

    /** Takes one sample now; public so that a caller can refresh after an operator command. */
    public void sample() {
        try {
            last.set(store.stats());
        } catch (RuntimeException e) {
            // Keep the previous sample: a gauge dropping to zero during a database outage would lie.
            failures.increment();
        }
    }

    @Override
    public void close() {
        scheduler.shutdownNow();
    }
}
