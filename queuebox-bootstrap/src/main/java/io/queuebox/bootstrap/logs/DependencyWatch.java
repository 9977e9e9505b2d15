package io.queuebox.bootstrap.logs;

import io.queuebox.ports.Health;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Polls the health of the database and the broker into a {@link DeliveryLog}, and ticks its summaries. A
 * dependency can go down while nothing is claimed or published (an idle relay, a paused worker), and the
 * summary of a window is due even when no failure comes after it. Each poll has a thread of its own: the
 * database check can wait for the pool's connection timeout and must not hold up the broker's or the tick.
 */
public final class DependencyWatch implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(DependencyWatch.class);

    private final ScheduledExecutorService scheduler;
    private final DeliveryLog log;

    private DependencyWatch(ScheduledExecutorService scheduler, DeliveryLog log) {
        this.scheduler = scheduler;
        this.log = log;
    }

    public static DependencyWatch start(DeliveryLog log, Supplier<Health> database, Supplier<Health> broker,
                                        Duration every) {
        ScheduledExecutorService scheduler = Executors.newScheduledThreadPool(3, runnable -> {
            Thread thread = new Thread(runnable, "queuebox-dependency-watch");
            thread.setDaemon(true);
            return thread;
        });
        DependencyWatch watch = new DependencyWatch(scheduler, log);
        watch.every(every, () -> log.databaseHealth(database.get()));
        watch.every(every, () -> log.brokerHealth(broker.get()));
        watch.every(every, log::tick);
        return watch;
    }

    private void every(Duration period, Runnable task) {
        scheduler.scheduleWithFixedDelay(() -> {
            try {
                task.run();
            } catch (RuntimeException e) {
                // A health check that throws must not end the polling (a scheduled task that throws never runs again).
                LOG.debug("dependency watch task failed", e);
            }
        }, period.toMillis(), period.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Stops polling and logs what is still counted. */
    @Override
    public void close() {
        scheduler.shutdownNow();
        try {
            scheduler.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        log.flush();
    }
}
