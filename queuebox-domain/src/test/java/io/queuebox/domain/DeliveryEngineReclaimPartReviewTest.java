package io.queuebox.domain;

import static io.queuebox.domain.Fixtures.anEventFor;
import static io.queuebox.domain.Fixtures.order;
import static io.queuebox.domain.FailedPeerTiming.INTERVAL;
import static io.queuebox.domain.FailedPeerTiming.WITHIN;
import static io.queuebox.domain.FailedPeerTiming.worker;
import static io.queuebox.domain.FailedPeerTiming.workers;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.WakeReason;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Review of 12a0424 ("after a failed cycle one worker at a time claims again for the engine", reclaimsAfterFailure).
 * The part "claims again after the pause" stays with its holder until that holder's next cycle that does not fail.
 * A holder whose next claim hangs (a connection that stopped answering) never has such a cycle: it keeps the part
 * while it hangs, and every other peer whose claim fails gives its claim up and waits idle. The rows a wake-up
 * named, whose claim by that peer failed, then wait for the claim watch's ticket, an interval after the failed claim
 * started, and the interval is the held-elsewhere back-off's stretched one (up to 16 intervals, 2 s): the same delay
 * DeliveryEnginePeerFailureReviewTest (B) found in 9aab452, now reached whenever the holder of the part hangs.
 */
class DeliveryEngineReclaimPartReviewTest {

    private final FakeOutboxStore fake = new FakeOutboxStore(Clock.systemUTC());
    private final FakePublisher publisher = new FakePublisher();
    private final RecordingListener listener = new RecordingListener();
    private final EngineHarness engines = new EngineHarness();
    private final CountDownLatch hung = new CountDownLatch(1);

    @AfterEach
    void stopEngines() {
        hung.countDown();
        engines.stopAll(publisher);
    }

    /**
     * Per worker: how many of its next claims throw, then whether the claim after them hangs (until the test ends).
     */
    private final class Scripted extends ForwardingOutboxStore {
        final AtomicInteger heldElsewhere = new AtomicInteger();
        final ConcurrentHashMap<Integer, AtomicInteger> failNext = new ConcurrentHashMap<>();
        final ConcurrentHashMap<Integer, Boolean> hangAfter = new ConcurrentHashMap<>();
        final ConcurrentHashMap<Integer, AtomicInteger> failed = new ConcurrentHashMap<>();
        final ConcurrentHashMap<Integer, AtomicInteger> hanging = new ConcurrentHashMap<>();
        final ConcurrentHashMap<Integer, AtomicInteger> claims = new ConcurrentHashMap<>();

        Scripted() {
            super(fake);
        }

        AtomicInteger of(ConcurrentHashMap<Integer, AtomicInteger> map, int worker) {
            return map.computeIfAbsent(worker, w -> new AtomicInteger());
        }

        @Override
        public ClaimBatch claim(ClaimRequest request) {
            int worker = worker();
            of(claims, worker).incrementAndGet();
            AtomicInteger fails = of(failNext, worker);
            if (fails.get() > 0) {
                fails.decrementAndGet();
                of(failed, worker).incrementAndGet();
                throw new IllegalStateException("connection reset");
            }
            if (Boolean.TRUE.equals(hangAfter.remove(worker))) {
                of(hanging, worker).incrementAndGet();
                EngineHarness.waitFor(hung, 60_000);
            }
            ClaimBatch batch = super.claim(request);
            if (batch.heldElsewhere()) {
                heldElsewhere.incrementAndGet();
            }
            return batch;
        }
    }

    /** Another relay holds a1 (a2 due behind it): the engine's polls back off to 16 intervals (2 s). */
    private DeliveryEngine startBackedOff(Scripted store, int workers) {
        OutboxEvent a1 = anEventFor(order("a"));
        OutboxEvent a2 = anEventFor(order("a"));
        fake.add(a1, a2);
        fake.stealLease(a1.eventId(), Duration.ofMinutes(5));
        DeliveryEngine engine = engines.start(DeliveryEngine.builder(), store, publisher, listener, workers(workers));
        await().atMost(Duration.ofSeconds(20)).until(() -> store.heldElsewhere.get() >= 4);
        return engine;
    }

    /** A wake-up about c1, whose claim by {@code peer} fails once: how long until c1 is acked. */
    private Duration wakeForRowWhoseClaimFailsOnce(DeliveryEngine engine, Scripted store, int peer) {
        OutboxEvent c1 = anEventFor(order("c"));
        fake.add(c1);
        int failedBefore = store.of(store.failed, peer).get();
        store.of(store.failNext, peer).set(1);
        long woken = System.nanoTime();
        engine.wake(WakeReason.EXTERNAL);
        await().atMost(Duration.ofSeconds(15)).until(() -> publisher.acked.contains(c1.eventId()));
        Duration waited = Duration.ofNanos(System.nanoTime() - woken);
        assertThat(store.of(store.failed, peer).get() - failedBefore)
                .as("worker %s took c1's wake-up and its claim failed", peer).isEqualTo(1);
        return waited;
    }

    // ------------------------------------------------------------------------------------------------ 1

    /**
     * Worker 1's claim fails once (it takes the part: reclaimerAfterFailure = 1), and its claim after the pause hangs.
     * It never has a cycle that does not fail, so it keeps the part. A wake-up about c1 goes to worker 2, the only
     * waiter; its claim fails once; it gives up (the part is worker 1's) and c1 waits for the claim watch's ticket,
     * a stretched interval (2 s) after worker 2's failed claim started. Before 9aab452 worker 2 paused one interval
     * and claimed again.
     */
    @Test
    void aWokenRowWhosePeerClaimFailedWaitsNoStretchedPollWhileWorkerOneHoldsThePartAndHangs() {
        Scripted store = new Scripted();
        DeliveryEngine engine = startBackedOff(store, 2);

        store.of(store.failNext, 1).set(1);
        store.hangAfter.put(1, true);
        int held = store.heldElsewhere.get();
        // A broadcast: both workers claim now; worker 1's claim fails, and its next one hangs.
        engine.wake(WakeReason.CAPTURE_RESTART);
        await().atMost(Duration.ofSeconds(15)).until(() -> store.of(store.hanging, 1).get() == 1
                && store.of(store.failed, 1).get() == 1 && store.heldElsewhere.get() > held);
        EngineHarness.pause(3 * INTERVAL.toMillis());

        Duration waited = wakeForRowWhoseClaimFailsOnce(engine, store, 2);
        assertThat(waited).as("c1 after its wake-up, whose claim by worker 2 failed once while worker 1, holding the"
                + " part, hangs (error pause %s)", INTERVAL).isLessThan(WITHIN);
    }

    // ------------------------------------------------------------------------------------------------ 2

    /**
     * Three workers. Worker 1's claim hangs (without failing). Worker 2's claim fails once (it takes the part:
     * CAS 0 to 2) and its claim after the pause hangs: it keeps the part. A wake-up about c1 goes to worker 3, the
     * only waiter; its claim fails once and it gives up; the claim watch stands in a stretched interval (2 s) later.
     */
    @Test
    void aWokenRowWhosePeerClaimFailedWaitsNoStretchedPollWhileAnotherPeerHoldsThePartAndHangs() {
        Scripted store = new Scripted();
        DeliveryEngine engine = startBackedOff(store, 3);

        store.hangAfter.put(1, true);
        store.of(store.failNext, 2).set(1);
        store.hangAfter.put(2, true);
        int worker3Claims = store.of(store.claims, 3).get();
        // A broadcast: every worker claims now.
        engine.wake(WakeReason.CAPTURE_RESTART);
        await().atMost(Duration.ofSeconds(15)).until(() -> store.of(store.hanging, 1).get() == 1
                && store.of(store.failed, 2).get() == 1 && store.of(store.hanging, 2).get() == 1
                && store.of(store.claims, 3).get() > worker3Claims);
        EngineHarness.pause(3 * INTERVAL.toMillis());

        Duration waited = wakeForRowWhoseClaimFailsOnce(engine, store, 3);
        assertThat(waited).as("c1 after its wake-up, whose claim by worker 3 failed once while worker 2, holding the"
                + " part, hangs (error pause %s)", INTERVAL).isLessThan(WITHIN);
    }
}
