package io.queuebox.domain;

import io.queuebox.ports.AggregateRef;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.PublishOutcome;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * A publisher that answers what the test tells it, keeps per-aggregate order like the contract asks
 * (after a failure, later messages of the aggregate are "not attempted"), and records what it saw.
 */
final class FakePublisher implements MessagePublisher {

    volatile Function<ClaimedDelivery, PublishOutcome> answer = d -> PublishOutcome.acked(d.eventId());
    /** When set, publish blocks until the latch opens (or a few seconds pass). */
    volatile CountDownLatch gate;
    final AtomicInteger throwingCalls = new AtomicInteger();
    /** Calls that throw an {@link Error}, as an adapter with a broken class path does. */
    final AtomicInteger erroringCalls = new AtomicInteger();

    final List<UUID> attempted = new CopyOnWriteArrayList<>();
    final AtomicInteger calls = new AtomicInteger();
    final AtomicInteger completed = new AtomicInteger();
    final List<UUID> acked = new CopyOnWriteArrayList<>();
    final Set<String> threads = ConcurrentHashMap.newKeySet();
    /** False makes this publisher break the contract: it keeps sending an aggregate after a failure. */
    volatile boolean keepsAggregateOrder = true;
    /** How long each publish call takes, roughly. */
    volatile long busyNanos;
    final Set<UUID> inFlight = ConcurrentHashMap.newKeySet();
    final List<UUID> concurrentDuplicates = new CopyOnWriteArrayList<>();

    @Override
    public List<PublishOutcome> publish(List<ClaimedDelivery> batch) {
        calls.incrementAndGet();
        threads.add(Thread.currentThread().getName());
        for (ClaimedDelivery delivery : batch) {
            if (!inFlight.add(delivery.eventId())) {
                concurrentDuplicates.add(delivery.eventId());
            }
        }
        try {
            if (throwingCalls.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                throw new IllegalStateException("broker connection broke");
            }
            if (erroringCalls.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                throw new NoClassDefFoundError("org/example/BrokerCodec");
            }
            CountDownLatch latch = gate;
            if (latch != null) {
                try {
                    latch.await(5, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            if (busyNanos > 0) {
                java.util.concurrent.locks.LockSupport.parkNanos(busyNanos);
            }
            List<PublishOutcome> outcomes = new ArrayList<>();
            Set<AggregateRef> failed = new HashSet<>();
            for (ClaimedDelivery delivery : batch) {
                if (keepsAggregateOrder && failed.contains(delivery.aggregate())) {
                    outcomes.add(PublishOutcome.notAttempted(delivery.eventId(), "not attempted"));
                    continue;
                }
                attempted.add(delivery.eventId());
                PublishOutcome outcome = answer.apply(delivery);
                if (outcome.isAcked()) {
                    acked.add(delivery.eventId());
                } else {
                    failed.add(delivery.aggregate());
                }
                outcomes.add(outcome);
            }
            return outcomes;
        } finally {
            batch.forEach(d -> inFlight.remove(d.eventId()));
            completed.incrementAndGet();
        }
    }

    @Override
    public void close() {
    }
}
