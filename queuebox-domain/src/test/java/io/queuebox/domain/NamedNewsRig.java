package io.queuebox.domain;

import static io.queuebox.domain.Fixtures.anEventFor;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.AggregateRef;
import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.ports.WakeReason;
import java.time.Clock;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * What the named-news tests share: an engine on a fake store whose claims the test can stall before they look at the
 * rows, delay after, or fail, without holding the fake's monitor (its own claim gate blocks {@code store.add}); a
 * publisher whose aggregates publish once their gate opens; and wake-ups that name the rows just committed. Every
 * gate opens and every engine stops in {@link #close}.
 */
final class NamedNewsRig implements AutoCloseable {

    final FakeOutboxStore store = new FakeOutboxStore(Clock.systemUTC());
    final FakePublisher publisher = new FakePublisher();
    final RecordingListener listener = new RecordingListener();
    private final EngineHarness engines = new EngineHarness();
    private final List<CountDownLatch> gates = new CopyOnWriteArrayList<>();
    private final Map<String, CountDownLatch> publishGates = new ConcurrentHashMap<>();

    /** Claims that reached the store, and those that looked at its rows. */
    final AtomicInteger claimsEntered = new AtomicInteger();
    final AtomicInteger claimsLooked = new AtomicInteger();
    /** The next claim to start waits for this before it looks at the rows (a stalled connection). */
    final AtomicReference<CountDownLatch> nextClaimLooksLate = new AtomicReference<>();
    /** The next claim to start chooses its rows at once and waits for this before it returns (its answer is late). */
    final AtomicReference<CountDownLatch> nextClaimAnswersLate = new AtomicReference<>();
    /** The next claim to start throws this without looking at the rows (the connection broke). */
    final AtomicReference<RuntimeException> nextClaimThrows = new AtomicReference<>();
    /** When set, the next batch with a row of this aggregate says it holds a later row back (ClaimBatch holdsBack). */
    final AtomicReference<String> holdsBackOnce = new AtomicReference<>();
    /** The row the publisher answers NotAttempted the first time it sees it (the broker was not reached). */
    volatile UUID notReachedOnce;
    final AtomicBoolean notReachedAnswered = new AtomicBoolean();
    /** A row that another relay claims the moment this engine releases it. */
    volatile UUID takenByAnotherRelayOnRelease;
    final AtomicBoolean takenByAnotherRelay = new AtomicBoolean();

    private final ForwardingOutboxStore gated = new ForwardingOutboxStore(store) {
        @Override
        public ClaimBatch claim(ClaimRequest request) {
            claimsEntered.incrementAndGet();
            CountDownLatch look = nextClaimLooksLate.getAndSet(null);
            CountDownLatch answer = nextClaimAnswersLate.getAndSet(null);
            RuntimeException failure = nextClaimThrows.getAndSet(null);
            if (look != null) {
                EngineHarness.waitFor(look, 10_000);
            }
            if (failure != null) {
                throw failure;
            }
            ClaimBatch batch = super.claim(request);
            claimsLooked.incrementAndGet();
            if (answer != null) {
                EngineHarness.waitFor(answer, 10_000);
            }
            String holding = holdsBackOnce.get();
            if (holding != null && batch.deliveries().stream().anyMatch(d -> d.aggregate().id().equals(holding))
                    && holdsBackOnce.compareAndSet(holding, null)) {
                return new ClaimBatch(batch.lease(), batch.deliveries(), true);
            }
            return batch;
        }

        @Override
        public int release(LeaseToken lease, Collection<UUID> eventIds) {
            int released = super.release(lease, eventIds);
            UUID taken = takenByAnotherRelayOnRelease;
            if (taken != null && eventIds.contains(taken)) {
                store.stealLease(taken, Duration.ofMinutes(10)); // the other relay's claim takes it at once
                takenByAnotherRelay.set(true);
            }
            return released;
        }
    };

    /** A latch that {@link #close} opens, for a test's gates. */
    CountDownLatch gate() {
        CountDownLatch gate = new CountDownLatch(1);
        gates.add(gate);
        return gate;
    }

    /** {@code aggregate}'s publish waits for the latch answered (until it opens, or 5 s). */
    CountDownLatch publishGate(String aggregate) {
        CountDownLatch gate = new CountDownLatch(1);
        publishGates.put(aggregate, gate);
        return gate;
    }

    /** {@code workers} workers at {@code depth} and a 30 s interval, each past its first claim (the table empty). */
    DeliveryEngine started(DeliveryEngine.Builder builder, int workers, int depth) {
        publisher.answer = delivery -> {
            CountDownLatch gate = publishGates.get(delivery.aggregate().id());
            if (gate != null) {
                EngineHarness.waitFor(gate, 5_000);
            }
            if (delivery.eventId().equals(notReachedOnce) && notReachedAnswered.compareAndSet(false, true)) {
                return PublishOutcome.notAttempted(delivery.eventId(), "broker not reached");
            }
            return PublishOutcome.acked(delivery.eventId());
        };
        DeliveryEngine engine = engines.start(builder, gated, publisher, listener,
                EngineHarness.oneWorker(depth, EngineHarness.LONG_INTERVAL).workers(workers));
        // Each worker's first claim at start finds the table empty; from then on only wake-ups start claims.
        await().atMost(EngineHarness.SOON).until(() -> store.claimCalls.get() >= workers);
        EngineHarness.pause(200);
        return engine;
    }

    /** A row committed for {@code aggregate}, and the after-commit wake-up that names it. */
    OutboxEvent committedAndNamed(DeliveryEngine engine, AggregateRef aggregate) {
        OutboxEvent event = anEventFor(aggregate);
        store.add(event);
        engine.wakeFor(WakeReason.EXTERNAL, List.of(event.eventId()));
        return event;
    }

    /** Both workers publishing (at depth 2, both publish stages): one batch of "a", then one of "b". */
    void bothPublishing(DeliveryEngine engine) {
        committedAndNamed(engine, Fixtures.order("a"));
        await().atMost(EngineHarness.SOON).until(() -> publisher.calls.get() == 1);
        committedAndNamed(engine, Fixtures.order("b"));
        await().atMost(EngineHarness.SOON).until(() -> publisher.calls.get() == 2);
    }

    boolean sent(OutboxEvent event) {
        return store.row(event.eventId()).status == RowStatus.SENT;
    }

    @Override
    public void close() {
        gates.forEach(CountDownLatch::countDown);
        publishGates.values().forEach(CountDownLatch::countDown);
        CountDownLatch returnGate = store.claimReturnGate;
        if (returnGate != null) {
            returnGate.countDown();
        }
        engines.stopAll(publisher);
    }
}
