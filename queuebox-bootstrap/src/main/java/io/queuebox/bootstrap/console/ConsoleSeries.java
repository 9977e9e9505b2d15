package io.queuebox.bootstrap.console;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.TimeGauge;
import io.queuebox.embed.metrics.BacklogGauges;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.DeliveryListener;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The last hour of the console's charts, in memory: a ring of points taken every sample interval. Backlog and
 * oldest-pending age are read from the backlog gauges (so the console adds no query of its own); publish rate
 * and commit→publish latency come from the deliveries this listener sees between two points.
 *
 * <p>Commit→publish latency is measured from the row's {@code created_at} (database clock) to the moment the
 * broker's confirm was recorded (this process's clock): a clock skew between the two shows in the chart.
 */
public final class ConsoleSeries implements DeliveryListener, AutoCloseable {

    /** One point of every chart; {@code latencyP50Ms}/{@code latencyMaxMs} are -1 when nothing was delivered. */
    public record Point(long at, double pending, double parked, double oldestPendingAgeMs, double publishedPerSecond,
                        long latencyP50Ms, long latencyMaxMs) {
    }

    static final Duration WINDOW = Duration.ofHours(1);

    private final MeterRegistry registry;
    private final Clock clock;
    private final Duration interval;
    private final Point[] ring;
    private int next;
    private int size;
    private long lastSampleNanos;
    // Latencies seen since the last point; guarded by this.
    private final List<Long> latenciesMs = new ArrayList<>();
    private long deliveredSinceLastPoint;
    private ScheduledExecutorService scheduler;

    ConsoleSeries(MeterRegistry registry, Clock clock, Duration interval) {
        this.registry = registry;
        this.clock = clock;
        this.interval = interval;
        this.ring = new Point[(int) Math.max(1, WINDOW.toMillis() / interval.toMillis())];
        this.lastSampleNanos = System.nanoTime();
    }

    /** Starts sampling every {@code interval} on a daemon thread of its own. */
    public static ConsoleSeries start(MeterRegistry registry, Duration interval) {
        ConsoleSeries series = new ConsoleSeries(registry, Clock.systemUTC(), interval);
        series.scheduler = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread thread = new Thread(runnable, "queuebox-console-sampler");
            thread.setDaemon(true);
            return thread;
        });
        series.scheduler.scheduleAtFixedRate(series::sample, interval.toMillis(), interval.toMillis(), TimeUnit.MILLISECONDS);
        return series;
    }

    @Override
    public void onDelivered(List<ClaimedDelivery> deliveries) {
        Instant now = clock.instant();
        synchronized (this) {
            for (ClaimedDelivery delivery : deliveries) {
                latenciesMs.add(Math.max(0, Duration.between(delivery.createdAt(), now).toMillis()));
            }
            deliveredSinceLastPoint += deliveries.size();
        }
    }

    /** Takes one point now. */
    synchronized void sample() {
        try {
            long nanos = System.nanoTime();
            double seconds = Math.max(0.001, (nanos - lastSampleNanos) / 1e9);
            lastSampleNanos = nanos;
            long p50 = -1;
            long max = -1;
            if (!latenciesMs.isEmpty()) {
                latenciesMs.sort(null);
                p50 = latenciesMs.get((latenciesMs.size() - 1) / 2);
                max = latenciesMs.get(latenciesMs.size() - 1);
            }
            ring[next] = new Point(clock.millis(), gauge(BacklogGauges.PENDING), gauge(BacklogGauges.PARKED),
                    oldestPendingAgeMs(), deliveredSinceLastPoint / seconds, p50, max);
            next = (next + 1) % ring.length;
            size = Math.min(size + 1, ring.length);
            latenciesMs.clear();
            deliveredSinceLastPoint = 0;
        } catch (RuntimeException e) {
            // A missing gauge must not kill the sampler thread; the chart shows a gap instead.
        }
    }

    private double gauge(String name) {
        Gauge gauge = registry.find(name).gauge();
        return gauge == null ? Double.NaN : gauge.value();
    }

    private double oldestPendingAgeMs() {
        TimeGauge gauge = registry.find(BacklogGauges.OLDEST_PENDING_AGE).timeGauge();
        return gauge == null ? Double.NaN : gauge.value(TimeUnit.MILLISECONDS);
    }

    /** The points of the last hour, oldest first. */
    public synchronized List<Point> points() {
        List<Point> points = new ArrayList<>(size);
        for (int i = 0; i < size; i++) {
            points.add(ring[(next - size + i + ring.length) % ring.length]);
        }
        return points;
    }

    public Duration interval() {
        return interval;
    }

    @Override
    public void close() {
        if (scheduler != null) {
            scheduler.shutdownNow();
        }
    }
}
