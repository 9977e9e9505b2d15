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
import io.queuebox.ports.PublishOutcome;
import io.queuebox.ports.WakeReason;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Review of "a peer whose cycle failed pauses and then waits like any idle peer" (runWorker, the FAILED branch for
 * worker index > 1). The held-elsewhere back-off (HeldElsewhereBackoff) stretches worker 1's poll, and the claim
 * watch's, up to 16 intervals (at most 2 s) on the ground that "the claimer holding them looks again itself once
 * its outcome is written". A peer whose batch failed no longer looks again, so the rows its failed batch freed, or
 * the row whose wake-up its failed claim used up, wait for the stretched poll.
 */
class DeliveryEnginePeerFailureReviewTest {

    private final FakeOutboxStore fake = new FakeOutboxStore(Clock.systemUTC());
    private final FakePublisher publisher = new FakePublisher();
    private final RecordingListener listener = new RecordingListener();
    private final EngineHarness engines = new EngineHarness();
    private final CountDownLatch endOfTest = new CountDownLatch(1);

    @AfterEach
    void stopEngines() {
        endOfTest.countDown();
        engines.stopAll(publisher);
    }

    private static DeliverySettings.Builder twoWorkers() {
        return workers(2);
    }

    private static boolean onWorker(int index) {
        return worker() == index;
    }

    /** Counts claims that came back held elsewhere; gates worker 1's claims while asked to. */
    private final class Hooked extends ForwardingOutboxStore {
        final AtomicInteger heldElsewhere = new AtomicInteger();
        volatile CountDownLatch workerOneClaimGate;
        final AtomicInteger workerOneGatedClaims = new AtomicInteger();
        final AtomicBoolean failWorkerTwosNextClaim = new AtomicBoolean();
        final AtomicInteger workerTwoFailedClaims = new AtomicInteger();

        Hooked() {
            super(fake);
        }

        @Override
        public ClaimBatch claim(ClaimRequest request) {
            CountDownLatch gate = workerOneClaimGate;
            if (gate != null && onWorker(1)) {
                workerOneGatedClaims.incrementAndGet();
                EngineHarness.waitFor(gate, 20_000);
            }
            if (onWorker(2) && failWorkerTwosNextClaim.compareAndSet(true, false)) {
                workerTwoFailedClaims.incrementAndGet();
                throw new IllegalStateException("connection reset");
            }
            ClaimBatch batch = super.claim(request);
            if (batch.heldElsewhere()) {
                heldElsewhere.incrementAndGet();
            }
            return batch;
        }
    }

    // ------------------------------------------------------------------------------------------------ A

    /**
     * Worker 2 holds a1 (a2, added after a1 was claimed, due behind it), so worker 1's polls find every due row held elsewhere and back off to
     * 16 intervals (2 s). Worker 2's publish of a1 then comes back not attempted (an outage-looking batch): a1 is
     * released, due at once, and nothing names it (no deadline, no wake-up). Before the change worker 2 paused one
     * interval and claimed again (a1 delivered about 125 ms later); now it waits like an idle peer, and a1 waits for
     * worker 1's stretched poll, up to 2 s (16 intervals): "rows freed by a failed batch are claimed again" within
     * about an interval does not hold.
     */
    @Test
    void rowsAPeersOutageLookingBatchFreedAreClaimedAgainSoonWhilePollsAreBackedOff() {
        OutboxEvent a1 = anEventFor(order("a"));
        OutboxEvent a2 = anEventFor(order("a"));
        fake.add(a1);
        Hooked store = new Hooked();
        CountDownLatch a1Publishing = new CountDownLatch(1);
        CountDownLatch a1Answers = new CountDownLatch(1);
        AtomicInteger a1Attempts = new AtomicInteger();
        publisher.answer = d -> {
            if (d.eventId().equals(a1.eventId()) && a1Attempts.incrementAndGet() == 1) {
                a1Publishing.countDown();
                EngineHarness.waitFor(a1Answers, 20_000);
                return PublishOutcome.notAttempted(d.eventId(), "broker unreachable");
            }
            return PublishOutcome.acked(d.eventId());
        };
        // Worker 1's first claim waits until worker 2 publishes a1, so that the peer, not worker 1, holds it.
        store.workerOneClaimGate = a1Publishing;
        engines.start(DeliveryEngine.builder(), store, publisher, listener, twoWorkers());

        assertThat(EngineHarnessAwait.await(a1Publishing, 10_000)).as("worker 2 publishes a1").isTrue();
        assertThat(publisher.threads).containsExactly("queuebox-worker-2");
        store.workerOneClaimGate = null;
        // a2 comes after a1 was claimed (a claim takes a1 and a2 together): due, held back by a1 under worker 2's lease.
        fake.add(a2);
        // Four held-elsewhere claims in a row: worker 1 now polls every 16 intervals (2 s).
        await().atMost(Duration.ofSeconds(15)).until(() -> store.heldElsewhere.get() >= 4);
        int claimsBefore = fake.claimCalls.get();
        long freed = System.nanoTime();
        a1Answers.countDown();

        await().atMost(Duration.ofSeconds(10)).until(() -> fake.count(RowStatus.SENT) == 2);
        Duration waited = Duration.ofNanos(System.nanoTime() - freed);
        assertThat(fake.sentOrder).containsExactly(a1.eventId(), a2.eventId());
        assertThat(waited).as("a1 and a2 after a1 was freed by worker 2's outage-looking batch (error pause %s,"
                        + " claims before %s)", INTERVAL, claimsBefore)
                .isLessThan(WITHIN);
    }

    // ------------------------------------------------------------------------------------------------ B

    /**
     * Another relay holds a1 (a2 due behind it): the engine's polls back off to 16 intervals (2 s). Worker 1's claim
     * hangs (a connection that stopped answering). A wake-up about c1 goes to worker 2, the only waiter, and its
     * claim fails once (a transient error). Before the change worker 2 paused one interval and claimed again; now it
     * waits, and the claim watch stands in only a stretched interval (2 s) after worker 2's failed claim started:
     * c1, a row a wake-up named, waits 16 intervals although "claims for wake-ups are not delayed".
     */
    @Test
    void aWokenRowWhosePeerClaimFailedIsNotLeftToTheStretchedPoll() {
        OutboxEvent a1 = anEventFor(order("a"));
        OutboxEvent a2 = anEventFor(order("a"));
        fake.add(a1, a2);
        fake.stealLease(a1.eventId(), Duration.ofMinutes(5));
        Hooked store = new Hooked();
        DeliveryEngine engine = engines.start(DeliveryEngine.builder(), store, publisher, listener, twoWorkers());
        await().atMost(Duration.ofSeconds(15)).until(() -> store.heldElsewhere.get() >= 4);

        // Worker 1's next claim hangs; a broadcast wake-up makes both workers claim now (worker 2's claim finds
        // every due row held elsewhere again, so the back-off stays stretched).
        CountDownLatch hung = new CountDownLatch(1);
        store.workerOneClaimGate = hung;
        int heldBefore = store.heldElsewhere.get();
        engine.wake(WakeReason.CAPTURE_RESTART);
        await().atMost(Duration.ofSeconds(10)).until(() -> store.workerOneGatedClaims.get() >= 1
                && store.heldElsewhere.get() > heldBefore);
        EngineHarness.pause(3 * INTERVAL.toMillis());

        OutboxEvent c1 = anEventFor(order("c"));
        fake.add(c1);
        store.failWorkerTwosNextClaim.set(true);
        long woken = System.nanoTime();
        engine.wake(WakeReason.EXTERNAL);

        await().atMost(Duration.ofSeconds(10)).until(() -> publisher.acked.contains(c1.eventId()));
        Duration waited = Duration.ofNanos(System.nanoTime() - woken);
        assertThat(store.workerTwoFailedClaims.get()).as("worker 2 took c1's wake-up and its claim failed").isEqualTo(1);
        assertThat(waited).as("c1 after its wake-up, whose claim by worker 2 failed once (error pause %s)", INTERVAL)
                .isLessThan(WITHIN);
        hung.countDown();
    }

    /** A latch await that answers whether it opened. */
    private static final class EngineHarnessAwait {
        static boolean await(CountDownLatch latch, long millis) {
            try {
                return latch.await(millis, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
    }
}
