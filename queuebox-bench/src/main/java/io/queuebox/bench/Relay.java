package io.queuebox.bench;

import io.queuebox.domain.DeliveryEngine;
import io.queuebox.domain.DeliverySettings;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.DeliveryListener;
import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.ports.WakeSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/** One delivery engine as the bench runs it, counting what it delivered and what went wrong. */
final class Relay implements AutoCloseable {

    /** Acks every message at once: the relay's own cost, SQL included, without a broker. */
    static final MessagePublisher NO_OP = new MessagePublisher() {
        @Override
        public List<PublishOutcome> publish(List<ClaimedDelivery> batch) {
            List<PublishOutcome> outcomes = new ArrayList<>(batch.size());
            for (ClaimedDelivery delivery : batch) {
                outcomes.add(PublishOutcome.acked(delivery.eventId()));
            }
            return outcomes;
        }

        @Override
        public void close() {
        }
    };

    final AtomicLong delivered = new AtomicLong();
    final AtomicLong failures = new AtomicLong();
    final AtomicLong claims = new AtomicLong();
    final AtomicLong emptyClaims = new AtomicLong();
    final AtomicLong claimNanos = new AtomicLong();
    /** Claims that took longer than a named wake-up is held for one (NamedWakes' hold limit, 20 ms). */
    final AtomicLong slowClaims = new AtomicLong();
    final AtomicLong publishNanos = new AtomicLong();
    final AtomicReference<String> lastError = new AtomicReference<>();
    /**
     * Claims and empty claims by the wake-up that started them: the reason a worker woke for, or "continuing" for a
     * claim straight after the worker's own batch (the engine reports no wake-up then). Tells which path makes the
     * empty claims of a steady rate.
     */
    final java.util.concurrent.ConcurrentHashMap<String, AtomicLong[]> claimsByReason = new java.util.concurrent.ConcurrentHashMap<>();
    private static final long SLOW_CLAIM_MILLIS = 20;
    private final ThreadLocal<String> lastReason = new ThreadLocal<>();
    private final DeliveryEngine engine;
    private final Object progress = new Object();

    Relay(OutboxStore store, MessagePublisher publisher, DeliverySettings settings, List<WakeSource> wakeSources) {
        DeliveryListener listener = new DeliveryListener() {
            @Override
            public void onDelivered(List<ClaimedDelivery> deliveries) {
                delivered.addAndGet(deliveries.size());
                synchronized (progress) {
                    progress.notifyAll();
                }
            }

            @Override
            public void onWake(io.queuebox.ports.WakeReason reason) {
                lastReason.set(reason.name());
            }

            @Override
            public void onClaimed(int rows, Duration elapsed) {
                String reason = lastReason.get();
                lastReason.remove();
                AtomicLong[] counts = claimsByReason.computeIfAbsent(reason == null ? "continuing" : reason,
                        r -> new AtomicLong[] {new AtomicLong(), new AtomicLong()});
                counts[0].incrementAndGet();
                if (rows == 0) {
                    counts[1].incrementAndGet();
                }
                claims.incrementAndGet();
                claimNanos.addAndGet(elapsed.toNanos());
                if (elapsed.toMillis() >= SLOW_CLAIM_MILLIS) {
                    slowClaims.incrementAndGet();
                }
                if (rows == 0) {
                    emptyClaims.incrementAndGet();
                }
            }

            @Override
            public void onPublished(List<io.queuebox.ports.PublishOutcome> outcomes, Duration elapsed) {
                publishNanos.addAndGet(elapsed.toNanos());
            }

            @Override
            public void onRetryScheduled(ClaimedDelivery delivery, Duration delay, String reason) {
                failures.incrementAndGet();
                lastError.set("retry: " + reason);
            }

            @Override
            public void onParked(ClaimedDelivery delivery, String reason) {
                failures.incrementAndGet();
                lastError.set("parked: " + reason);
            }

            @Override
            public void onError(String step, Throwable error) {
                failures.incrementAndGet();
                lastError.set(step + ": " + error);
            }
        };
        DeliveryEngine.Builder builder = DeliveryEngine.builder().store(store).publisher(publisher)
                .settings(settings).listener(listener);
        wakeSources.forEach(builder::wakeSource);
        this.engine = builder.build();
    }

    static DeliverySettings settings(boolean ordered, int workers, int batchSize, Duration wakeInterval) {
        return settings(ordered, workers, batchSize, wakeInterval, DeliverySettings.DEFAULT_PIPELINE_DEPTH);
    }

    /** The same with a pipeline depth of the caller's (1: the serial loop). */
    static DeliverySettings settings(boolean ordered, int workers, int batchSize, Duration wakeInterval,
                                     int pipelineDepth) {
        return DeliverySettings.builder().owner("queuebox-bench")
                .ordering(ordered ? Ordering.PER_AGGREGATE : Ordering.NONE)
                .workers(workers).batchSize(batchSize).wakeInterval(wakeInterval).pipelineDepth(pipelineDepth)
                .purgeEnabled(false).build();
    }

    /** Wakes the engine as an application does right after its commit (see QueueBox#wake). */
    void wake() {
        engine.wake(io.queuebox.ports.WakeReason.EXTERNAL);
    }

    void wakeFor(java.util.UUID eventId) {
        engine.wakeFor(io.queuebox.ports.WakeReason.EXTERNAL, java.util.List.of(eventId));
    }

    Relay start() {
        engine.start();
        return this;
    }

    /** Waits until {@code rows} were delivered; false on timeout. */
    boolean awaitDelivered(long rows, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (progress) {
            while (delivered.get() < rows) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                progress.wait(Math.max(1, Math.min(100, left / 1_000_000)));
            }
        }
        return true;
    }

    /** Claims and empty claims so far per wake reason: {claims, empty}. */
    java.util.Map<String, long[]> claimsByReason() {
        java.util.Map<String, long[]> copy = new java.util.TreeMap<>();
        claimsByReason.forEach((reason, counts) -> copy.put(reason, new long[] {counts[0].get(), counts[1].get()}));
        return copy;
    }

    @Override
    public void close() {
        engine.stop(Duration.ofSeconds(10));
    }
}
