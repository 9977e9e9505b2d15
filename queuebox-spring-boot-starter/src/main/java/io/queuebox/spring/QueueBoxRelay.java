package io.queuebox.spring;

import io.micrometer.core.instrument.MeterRegistry;
import io.queuebox.embed.QueueBox;
import io.queuebox.embed.config.Databases;
import io.queuebox.embed.config.Keys;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.embed.internal.Settings;
import io.queuebox.ports.Health;
import io.queuebox.ports.MessagePublisher;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * The relay as part of the application's lifecycle: started after the context is refreshed, stopped before the
 * data source and the publisher are closed. Stopping lets in-flight batches finish within
 * {@code queuebox.shutdown.deadline-ms}, on a thread of its own, so the other beans of its phase stop meanwhile.
 */
public class QueueBoxRelay implements SmartLifecycle {

    /**
     * Stops after the web server (phase {@code DEFAULT_PHASE - 2048}) has finished its requests, so events they
     * committed are still woken and delivered; starts before it.
     */
    public static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 4096;

    private static final Logger LOG = LoggerFactory.getLogger(QueueBoxRelay.class);

    private final QueueBoxConfig config;
    private final DataSource dataSource;
    private final MessagePublisher publisher;
    private final MeterRegistry meterRegistry;
    private volatile QueueBox relay;

    /** @param meterRegistry the application's registry, or {@code null} for no meters */
    public QueueBoxRelay(QueueBoxConfig config, DataSource dataSource, MessagePublisher publisher,
                         MeterRegistry meterRegistry) {
        this.config = config;
        this.dataSource = dataSource;
        this.publisher = publisher;
        this.meterRegistry = meterRegistry;
    }

    @Override
    public void start() {
        QueueBox.Builder builder = QueueBox.builder()
                .dataSource(dataSource)
                .outbox(Databases.outboxTable(config))
                .publisher(publisher)
                .settings(Settings.delivery(config, Settings.Wakes.POLL))
                .backlogSampleInterval(config.millis(Keys.METRICS_BACKLOG_SAMPLE_MS));
        if (meterRegistry != null) {
            builder.meterRegistry(meterRegistry);
        }
        relay = builder.start();
        LOG.info("QueueBox relay started: {}.{} -> {}", config.string(Keys.OUTBOX_SCHEMA), config.string(Keys.OUTBOX_TABLE),
                config.string(Keys.BROKER_TYPE));
    }

    @Override
    public void stop(Runnable callback) {
        QueueBox running = relay;
        if (running == null) {
            callback.run();
            return;
        }
        Thread stopping = new Thread(() -> {
            try {
                if (!running.stop(config.millis(Keys.SHUTDOWN_DEADLINE_MS))) {
                    LOG.warn("QueueBox: in-flight batches did not finish within shutdown.deadlineMs; their leases lapse");
                }
            } finally {
                relay = null;
                callback.run();
            }
        }, "queuebox-stop");
        stopping.start();
    }

    @Override
    public void stop() {
        QueueBox running = relay;
        if (running != null) {
            running.stop(config.millis(Keys.SHUTDOWN_DEADLINE_MS));
            relay = null;
        }
    }

    @Override
    public boolean isRunning() {
        QueueBox running = relay;
        return running != null && running.isRunning();
    }

    @Override
    public int getPhase() {
        return PHASE;
    }

    /** Claims now: after a commit, instead of at the next poll. A hint; nothing when the relay is not running. */
    public void wake() {
        QueueBox running = relay;
        if (running != null) {
            running.wake();
        }
    }

    /**
     * {@link #wake()} naming the events just committed: a busy worker then looks again after its batch only for
     * those no claim has taken.
     */
    public void wakeFor(java.util.Collection<java.util.UUID> eventIds) {
        QueueBox running = relay;
        if (running != null) {
            running.wakeFor(eventIds);
        }
    }

    /** Delivery's health: the engine's threads, then the broker. Down while the relay is not running. */
    public Health health() {
        QueueBox running = relay;
        if (running == null) {
            return Health.down("relay not running");
        }
        Health liveness = running.liveness();
        return liveness.isUp() ? running.brokerHealth() : liveness;
    }
}
