package io.queuebox.domain;

import static io.queuebox.domain.Fixtures.anEventFor;
import static io.queuebox.domain.Fixtures.order;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.AggregateRef;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.Ordering;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A pipelined worker records a batch whose publish was clean (every row acked) on its record stage while its publish
 * stage publishes the next batch, so the broker does not wait for the outcome writes. The first test failed before the
 * record stage existed: the publish stage marked each batch sent before it published the next.
 */
class DeliveryEngineRecordOverlapTest {

    private static final Duration SOON = EngineHarness.SOON;
    private static final Duration LONG_INTERVAL = EngineHarness.LONG_INTERVAL;

    private final FakeOutboxStore fake = new FakeOutboxStore(Clock.systemUTC());
    private final GatedStore store = new GatedStore(fake);
    private final FakePublisher publisher = new FakePublisher();
    private final RecordingListener listener = new RecordingListener();
    private final EngineHarness engines = new EngineHarness();

    @AfterEach
    void stopEngines() {
        store.open();
        engines.stopAll(publisher);
    }

    private DeliveryEngine started(DeliverySettings.Builder settings) {
        return engines.start(DeliveryEngine.builder(), store, publisher, listener, settings);
    }

    private UUID oneEventOf(String aggregate) {
        return fake.add(anEventFor(order(aggregate))).get(0).eventId();
    }

    private void awaitSent(UUID... ids) {
        await().atMost(SOON).until(() -> {
            for (UUID id : ids) {
                if (fake.row(id).status != RowStatus.SENT) {
                    return false;
                }
            }
            return true;
        });
    }

    @Test
    void theStagePublishesTheNextBatchWhileTheLastOneIsBeingMarkedSent() {
        UUID a = oneEventOf("a");
        UUID b = oneEventOf("b");
        store.closeMarkSent();

        started(EngineHarness.oneWorker(2, LONG_INTERVAL).batchSize(1));

        await().atMost(SOON).until(() -> store.markSentCalls.get() == 1);
        await("the publish of b while a's markSent is held").atMost(SOON).until(() -> publisher.completed.get() == 2);
        assertThat(publisher.attempted).containsExactly(a, b);
        assertThat(fake.row(a).status).as("a, still being marked").isEqualTo(RowStatus.PENDING);
        store.open();
        awaitSent(a, b);
    }

    @Test
    void aWorkerClaimsNoMoreThanItsDepthWhileABatchIsBeingRecorded() {
        UUID a = oneEventOf("a");
        UUID b = oneEventOf("b");
        UUID c = oneEventOf("c");
        store.closeMarkSent();

        started(EngineHarness.oneWorker(2, LONG_INTERVAL).batchSize(1));

        await().atMost(SOON).until(() -> publisher.completed.get() == 2);
        EngineHarness.pause(200);
        assertThat(fake.row(c).lease).as("c, claimed while a is recorded and b waits for the record stage").isNull();
        assertThat(fake.maxLiveLeases.get()).isEqualTo(2);
        store.open();
        awaitSent(a, b, c);
        assertThat(fake.maxLiveLeases.get()).isEqualTo(2);
    }

    @Test
    void aBatchWhoseRowsAnotherClaimerTookWhileItWaitedForTheRecordStageIsReportedLost() {
        // The stage publishes b while a is recorded, then waits to hand b over; meanwhile b's lease lapsed (a long
        // pause) and another claimer took it. b's markSent, fenced by the lease, updates nothing: reported, and b
        // stays the other claimer's to deliver (at least once, never lost).
        UUID a = oneEventOf("a");
        UUID b = oneEventOf("b");
        store.closeMarkSent();
        started(EngineHarness.oneWorker(2, LONG_INTERVAL).batchSize(1));
        await().atMost(SOON).until(() -> publisher.completed.get() == 2);

        fake.stealLease(b);
        store.open();

        awaitSent(a);
        await().atMost(SOON).until(() -> !listener.leaseLost.isEmpty());
        assertThat(listener.leaseLost).containsExactly("1->0");
        assertThat(fake.row(b).status).as("b, the other claimer's to deliver").isEqualTo(RowStatus.PENDING);
    }

    @Test
    void aRecordStageHitByAnErrorFreesItsSlotReportsItselfAndTheRowsComeBackWithTheirLease() {
        UUID a = oneEventOf("a");
        UUID b = oneEventOf("b");
        UUID c = oneEventOf("c");
        store.errorOnFirstMarkSent.set(new AssertionError("driver bug"));

        DeliveryEngine engine = started(EngineHarness.oneWorker(2, LONG_INTERVAL).batchSize(1)
                .leaseLength(Duration.ofMillis(900)));

        awaitSent(b, c);
        assertThat(listener.errors).contains("record-stage: driver bug");
        await("a, claimed again once its lease lapsed").atMost(SOON).until(() -> fake.row(a).status == RowStatus.SENT);
        assertThat(publisher.attempted.stream().filter(a::equals).count()).as("publishes of a").isEqualTo(2);
        await("health once a record completed").atMost(SOON).until(() -> engine.health().isUp());
    }

    @Test
    void aFailedMarkSentPausesTheNextPublishAsAFailedBatchDoes() {
        UUID a = oneEventOf("a");
        UUID b = oneEventOf("b");
        UUID c = oneEventOf("c");
        Map<UUID, Long> publishedAt = new ConcurrentHashMap<>();
        publisher.answer = d -> {
            publishedAt.putIfAbsent(d.eventId(), System.nanoTime());
            return io.queuebox.ports.PublishOutcome.acked(d.eventId());
        };
        AtomicLong failedAt = new AtomicLong();
        store.beforeFirstMarkSent = () -> {
            // a's record fails once b's publish is under way: c, claimed after it, must wait out the pause.
            await().atMost(SOON).until(() -> publishedAt.containsKey(b));
            failedAt.set(System.nanoTime());
            throw new IllegalStateException("connection reset");
        };

        started(EngineHarness.oneWorker(2, LONG_INTERVAL).batchSize(1)); // a 30 s interval: the error pause is 1 s

        await().atMost(Duration.ofSeconds(6)).until(() -> publishedAt.containsKey(c));
        assertThat(listener.errors).contains("markSent: connection reset");
        assertThat(Duration.ofNanos(publishedAt.get(c) - failedAt.get()))
                .as("between a's failed record and c's publish").isGreaterThan(Duration.ofMillis(900));
        awaitSent(b, c);
    }

    @Test
    void stopWaitsForTheBatchBeingRecorded() throws Exception {
        UUID a = oneEventOf("a");
        store.closeMarkSent();
        DeliveryEngine engine = started(EngineHarness.oneWorker(2, LONG_INTERVAL).batchSize(1));
        await().atMost(SOON).until(() -> store.markSentCalls.get() == 1);

        AtomicReference<Boolean> inTime = new AtomicReference<>();
        Thread stopper = new Thread(() -> inTime.set(engine.stop(Duration.ofSeconds(3))));
        stopper.start();
        EngineHarness.pause(300);
        assertThat(inTime.get()).as("stop, while a is being marked").isNull();
        store.open();
        stopper.join(TimeUnit.SECONDS.toMillis(5));

        assertThat(inTime.get()).as("stop finished in time").isTrue();
        assertThat(fake.row(a).status).isEqualTo(RowStatus.SENT);
        assertThat(fake.releaseCalls.get()).isZero();
    }

    @Test
    void stopPastItsDeadlineLeavesTheBatchBeingRecordedToItsRecord() {
        UUID a = oneEventOf("a");
        store.closeMarkSent();
        DeliveryEngine engine = started(EngineHarness.oneWorker(2, LONG_INTERVAL).batchSize(1));
        await().atMost(SOON).until(() -> store.markSentCalls.get() == 1);

        assertThat(engine.stop(Duration.ofMillis(200))).as("stop finished in time").isFalse();
        EngineHarness.pause(200);
        assertThat(fake.releaseCalls.get()).as("releases of a batch whose outcome is being written").isZero();
        store.open();
        awaitSent(a);
    }

    @ParameterizedTest(name = "depth {0}")
    @ValueSource(ints = {2, 3})
    void orderPerAggregateHoldsWhileRecordsLagBehindPublishes(int depth) {
        List<AggregateRef> aggregates = List.of(order("a"), order("b"), order("c"), order("d"));
        Map<AggregateRef, List<UUID>> written = new ConcurrentHashMap<>();
        for (int i = 0; i < 40; i++) {
            for (AggregateRef aggregate : aggregates) {
                OutboxEvent event = anEventFor(aggregate);
                fake.add(event);
                written.computeIfAbsent(aggregate, x -> new CopyOnWriteArrayList<>()).add(event.eventId());
            }
        }
        store.markSentDelay = () -> TimeUnit.MILLISECONDS.toNanos(ThreadLocalRandom.current().nextInt(6));
        publisher.busyNanos = TimeUnit.MILLISECONDS.toNanos(1);

        started(DeliverySettings.builder().workers(2).pipelineDepth(depth).wakeInterval(Duration.ofMillis(50))
                .ordering(Ordering.PER_AGGREGATE).batchSize(6).purgeEnabled(false)
                .retryPolicy(EngineHarness.QUICK_RETRIES).shutdownDeadline(Duration.ofSeconds(1)));

        await().atMost(Duration.ofSeconds(10)).until(() -> fake.count(RowStatus.SENT) == 160);
        assertThat(publisher.concurrentDuplicates).isEmpty();
        Map<UUID, AggregateRef> aggregateOf = new ConcurrentHashMap<>();
        written.forEach((aggregate, ids) -> ids.forEach(id -> aggregateOf.put(id, aggregate)));
        for (AggregateRef aggregate : aggregates) {
            List<UUID> published = new ArrayList<>(publisher.attempted.stream()
                    .filter(id -> aggregate.equals(aggregateOf.get(id))).toList());
            assertThat(published).as("publishes of %s", aggregate).containsExactlyElementsOf(written.get(aggregate));
        }
    }

    /** Delegates to the fake; markSent can be held, slowed, or made to fail once (outside the fake's monitor). */
    private static final class GatedStore extends ForwardingOutboxStore {
        private final FakeOutboxStore delegate;
        private volatile CountDownLatch markSentGate;
        final AtomicInteger markSentCalls = new AtomicInteger();
        final AtomicReference<Error> errorOnFirstMarkSent = new AtomicReference<>();
        volatile Runnable beforeFirstMarkSent;
        private final AtomicBoolean firstMarkSentSeen = new AtomicBoolean();
        volatile Supplier<Long> markSentDelay;

        GatedStore(FakeOutboxStore delegate) {
            super(delegate);
            this.delegate = delegate;
        }

        void closeMarkSent() {
            markSentGate = new CountDownLatch(1);
        }

        void open() {
            CountDownLatch gate = markSentGate;
            if (gate != null) {
                gate.countDown();
            }
        }

        @Override
        public int markSent(LeaseToken lease, Collection<UUID> eventIds) {
            markSentCalls.incrementAndGet();
            CountDownLatch gate = markSentGate;
            if (gate != null) {
                EngineHarness.waitFor(gate, 10_000);
            }
            Supplier<Long> delay = markSentDelay;
            if (delay != null) {
                LockSupport.parkNanos(delay.get());
            }
            if (firstMarkSentSeen.compareAndSet(false, true)) {
                Error error = errorOnFirstMarkSent.get();
                if (error != null) {
                    throw error;
                }
                Runnable before = beforeFirstMarkSent;
                if (before != null) {
                    before.run();
                }
            }
            return delegate.markSent(lease, eventIds);
        }
    }
}
