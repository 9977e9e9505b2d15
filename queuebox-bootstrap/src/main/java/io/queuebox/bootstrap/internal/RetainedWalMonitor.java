package io.queuebox.bootstrap.internal;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.queuebox.ports.CaptureSettings;
import io.queuebox.ports.CaptureSourceInspector;
import io.queuebox.ports.CaptureSourceReport;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Samples the write-ahead log the replication slot holds back, on a schedule (never on the scrape
 * path), and warns above a threshold, because a slot nobody reads fills the database's disk.
 */
final class RetainedWalMonitor implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(RetainedWalMonitor.class);

    private final CaptureSourceInspector inspector;
    private final CaptureSettings settings;
    private final long warnBytes;
    private final AtomicLong retained = new AtomicLong(-1);
    private final ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor(runnable -> {
        Thread thread = new Thread(runnable, "queuebox-capture-wal-monitor");
        thread.setDaemon(true);
        return thread;
    });
    private boolean warned;

    private RetainedWalMonitor(CaptureSourceInspector inspector, CaptureSettings settings, long warnBytes) {
        this.inspector = inspector;
        this.settings = settings;
        this.warnBytes = warnBytes;
    }

    static RetainedWalMonitor start(CaptureSourceInspector inspector, CaptureSettings settings, long warnBytes,
                                    Duration interval, MeterRegistry registry) {
        RetainedWalMonitor monitor = new RetainedWalMonitor(inspector, settings, warnBytes);
        Gauge.builder("queuebox.capture.retained.wal", monitor.retained, value -> value.get() < 0 ? Double.NaN : value.get())
                .baseUnit("bytes")
                .tag("slot", settings.fingerprint().slot())
                .description("Write-ahead log the replication slot holds back; NaN when unknown")
                .register(registry);
        Gauge.builder("queuebox.capture.retained.wal.warn.threshold", () -> warnBytes)
                .baseUnit("bytes")
                .description("outbox.capture.retainedWalWarnBytes")
                .register(registry);
        monitor.scheduler.scheduleWithFixedDelay(monitor::sample, 0, interval.toMillis(), TimeUnit.MILLISECONDS);
        return monitor;
    }

    private void sample() {
        try {
            CaptureSourceReport report = inspector.inspect(settings);
            long bytes = report.retainedLogBytes().orElse(-1);
            retained.set(bytes);
            if (bytes >= warnBytes && !warned) {
                LOG.warn("replication slot {} holds back {} bytes of WAL (outbox.capture.retainedWalWarnBytes = {}):"
                        + " a slot nobody reads fills the database's disk; check the outbox-capture health component",
                        settings.fingerprint().slot(), bytes, warnBytes);
            }
            warned = bytes >= warnBytes;
        } catch (RuntimeException e) {
            retained.set(-1);
            LOG.debug("cannot sample the slot's retained WAL: {}", e.toString());
        }
    }

    /** The last sample; empty before the first or when the slot cannot be read. */
    java.util.OptionalLong retainedBytes() {
        long bytes = retained.get();
        return bytes < 0 ? java.util.OptionalLong.empty() : java.util.OptionalLong.of(bytes);
    }

    long warnBytes() {
        return warnBytes;
    }

    @Override
    public void close() {
        scheduler.shutdownNow();
    }
}
