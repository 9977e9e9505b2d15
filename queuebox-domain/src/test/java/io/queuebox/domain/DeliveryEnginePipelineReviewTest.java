package io.queuebox.domain;

import static io.queuebox.domain.Fixtures.anEventFor;
import static io.queuebox.domain.Fixtures.order;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Adversarial review of the pipelined delivery engine (branch issue-14-pipeline). Every test here fails on that
 * branch for the reason its name and comments give.
 */
class DeliveryEnginePipelineReviewTest {

    private static final Duration SOON = EngineHarness.SOON;
    private static final Duration LONG_INTERVAL = EngineHarness.LONG_INTERVAL;
    private static final RetryPolicy QUICK_RETRIES = EngineHarness.QUICK_RETRIES;

    private final FakeOutboxStore fake = new FakeOutboxStore(Clock.systemUTC());
    private final HookedStore store = new HookedStore(fake);
    private final FakePublisher publisher = new FakePublisher();
    private final RecordingListener listener = new RecordingListener();
    private final EngineHarness engines = new EngineHarness();
    private final List<CountDownLatch> gates = new CopyOnWriteArrayList<>();

    @AfterEach
    void stopEngines() {
        gates.forEach(CountDownLatch::countDown);
        store.markSentGate = null;
        store.releaseGate = null;
        store.releaseError = null;
        engines.stopAll(publisher);
    }

    private CountDownLatch gate() {
        CountDownLatch latch = new CountDownLatch(1);
        gates.add(latch);
        return latch;
    }

    private static DeliverySettings.Builder settings(int depth) {
        return EngineHarness.oneWorker(depth, LONG_INTERVAL);
    }

    private DeliveryEngine started(DeliverySettings.Builder settings) {
        return engines.start(DeliveryEngine.builder(), store, publisher, listener, settings);
    }

    private UUID oneEventOf(String aggregate) {
        OutboxEvent event = anEventFor(order(aggregate));
        fake.add(event);
        return event.eventId();
    }

    static void waitFor(CountDownLatch latch) {
        try {
            latch.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ------------------------------------------------------------------ finding 1 (fencing / concurrent send)

    /**
     * Batch B waits in the stage's queue behind a slow publish of A. Meanwhile B's lease is lost (it lapsed and
     * another relay re-claimed the row: stealLease; first written when the renewer also renewed and reported queued
     * batches, which it no longer does). The
     * stage still publishes B once A is done, so this relay sends a row another relay owns and may be sending at the
     * same moment. The serial engine never starts a publish for a batch it already knows it lost: it publishes
     * right after the claim.
     */
    @Test
    void aQueuedBatchWhoseLeaseWasLostBeforeItsPublishStartedIsNotPublished() {
        UUID a = oneEventOf("a");
        UUID b = oneEventOf("b");
        CountDownLatch aMayFinish = gate();
        publisher.answer = d -> {
            if (d.eventId().equals(a)) {
                waitFor(aMayFinish);
            }
            return PublishOutcome.acked(d.eventId());
        };
        started(settings(2).batchSize(1).leaseLength(Duration.ofMillis(300)));
        await().atMost(SOON).until(() -> publisher.calls.get() == 1 && fake.row(b).lease != null);

        fake.stealLease(b, Duration.ofSeconds(30)); // another relay re-claimed b after this relay's lease on it lapsed
        // b's own lease (300 ms from its claim) runs out while it waits: a queued batch is not renewed.
        await().pollDelay(Duration.ofMillis(400)).atMost(SOON).until(() -> true);
        aMayFinish.countDown();

        await().atMost(SOON).until(() -> fake.row(a).status == RowStatus.SENT);
        await().alias("b was published after its lease was known lost").during(Duration.ofMillis(300))
                .atMost(Duration.ofSeconds(1)).until(() -> !publisher.attempted.contains(b));
    }

    // ------------------------------------------------------------------ finding 2 (stop by the deadline)

    /**
     * After the deadline, stop() releases the queued batch itself, on the caller's thread, with a store call. With a
     * store that hangs (a partition, a pool with no free connection) stop() does not return by the deadline; the
     * serial engine's stop() makes no store call at all.
     */
    @Test
    void stopReturnsByAboutTheDeadlineEvenWhenTheStoreHangs() {
        oneEventOf("a");
        UUID b = oneEventOf("b");
        publisher.gate = gate(); // A's publish runs past the deadline
        DeliveryEngine engine = started(settings(2).batchSize(1));
        await().atMost(SOON).until(() -> publisher.calls.get() == 1 && fake.row(b).lease != null);
        store.releaseGate = gate(); // the store now hangs on release

        AtomicReference<Boolean> result = new AtomicReference<>();
        long start = System.nanoTime();
        Thread stopper = new Thread(() -> result.set(engine.stop(Duration.ofMillis(100))));
        stopper.setDaemon(true);
        stopper.start();

        await().alias("stop(100 ms) returned").atMost(Duration.ofSeconds(1)).until(() -> result.get() != null);
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(1));
    }

    // ------------------------------------------------------------------ finding 3 (rows held unboundedly)

    /**
     * The stage is stuck in A's outcome write (a store call that does not return: a half-open connection, a lock
     * wait). A's lease is no longer renewed and lapses, as in the serial engine. But B, queued behind it and never
     * started, stays in the renewer's care: this live relay renews B's lease for as long as the stage is stuck and
     * nobody (not this relay, not another) can deliver B. At depth 1 nothing of this kind is held.
     */
    @Test
    void aQueuedBatchIsNotHeldForeverWhileItsStageIsStuckInAnOutcomeWrite() {
        UUID a = oneEventOf("a");
        UUID b = oneEventOf("b");
        store.markSentGate = gate();
        Duration lease = Duration.ofMillis(300);
        started(settings(2).batchSize(1).leaseLength(lease));
        await().atMost(SOON).until(() -> store.markSentEntered.get() && fake.row(b).lease != null);
        // Since the record stage, b may be published while a's write is stuck; then it waits for that stage, no
        // longer renewed.
        assertThat(publisher.attempted).startsWith(a);

        await().alias("b published, released, or its lease left to lapse, within a few lease lengths")
                .atMost(lease.multipliedBy(6)).until(() -> publisher.attempted.contains(b) || leaseLapsed(b));
    }

    private boolean leaseLapsed(UUID id) {
        FakeOutboxStore.Row row = fake.row(id);
        synchronized (fake) {
            return row.lease == null || row.leaseUntil == null || !row.leaseUntil.isAfter(Instant.now());
        }
    }

    // ------------------------------------------------------------------ finding 4 (outage pause)

    /**
     * The serial engine's rule: after a batch with nothing acked and a row not attempted (the broker is likely down)
     * the worker pauses min(wakeInterval, 1 s) before it tries again, so an outage costs one publish per pause. At
     * depth 2 the batch the claimer took while A was out is published the instant A's outage outcome is written,
     * without any pause: every outage hit costs pipelineDepth publishes back to back.
     */
    @Test
    void duringABrokerOutageTheQueuedBatchIsNotPublishedWithoutThePause() {
        oneEventOf("a");
        UUID b = oneEventOf("b");
        List<Long> attempts = new CopyOnWriteArrayList<>();
        AtomicInteger calls = new AtomicInteger();
        publisher.answer = d -> {
            int call = calls.incrementAndGet();
            if (call == 1) {
                // Deterministic overlap: A's outcome is known only once the claimer has taken B.
                await().atMost(SOON).until(() -> fake.row(b).lease != null);
            }
            attempts.add(System.nanoTime());
            return call <= 2 ? PublishOutcome.notAttempted(d.eventId(), "broker down")
                    : PublishOutcome.acked(d.eventId());
        };

        started(settings(2).batchSize(1)); // a 30 s interval: the error pause is 1 s

        await().atMost(Duration.ofSeconds(6)).until(() -> fake.count(RowStatus.SENT) == 2);
        assertThat(Duration.ofNanos(attempts.get(1) - attempts.get(0)))
                .as("between the first outage answer and the next publish").isGreaterThan(Duration.ofMillis(900));
    }

    // ------------------------------------------------------------------ finding 5 (stop throws, renewer never stops)

    /**
     * stop() now calls the store (the release of a queued batch after the deadline) and catches only
     * RuntimeException there. An Error from the adapter (the NoClassDefFoundError the engine is careful about
     * everywhere else) escapes stop(): the renewer is never shut down, so the lease of the batch still publishing is
     * renewed for ever after the deadline (and the non-daemon renewer thread keeps the JVM alive), wake sources are
     * not closed, and the engine stays STOPPING. The serial stop() makes no store call.
     */
    @Test
    void anErrorFromTheStoreWhileStopReleasesAQueuedBatchDoesNotEscapeAndLeasesStopBeingRenewed() {
        UUID a = oneEventOf("a");
        UUID b = oneEventOf("b");
        publisher.gate = gate(); // A still publishing at the deadline
        DeliveryEngine engine = started(settings(2).batchSize(1).leaseLength(Duration.ofMillis(300)));
        await().atMost(SOON).until(() -> publisher.calls.get() == 1 && fake.row(b).lease != null);
        store.releaseError = new NoClassDefFoundError("org/postgresql/core/Utils");

        Throwable thrown = null;
        try {
            engine.stop(Duration.ofMillis(100));
        } catch (Throwable e) {
            thrown = e;
        }
        int renewalsAtStop = fake.renewCalls.get();
        java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(500)); // 5 renewal intervals

        assertThat(fake.renewCalls.get()).as("renewals of %s after stop returned", a).isEqualTo(renewalsAtStop);
        assertThat(thrown).as("what stop() threw").isNull();
    }

    // ------------------------------------------------------------------ a store with hooks

    /** Delegates to the fake; blocks before delegating (outside the fake's monitor) when a gate is set. */
    static final class HookedStore extends ForwardingOutboxStore {
        private final FakeOutboxStore delegate;
        volatile CountDownLatch markSentGate;
        volatile CountDownLatch releaseGate;
        volatile Error releaseError;
        final AtomicBoolean markSentEntered = new AtomicBoolean();

        HookedStore(FakeOutboxStore delegate) {
            super(delegate);
            this.delegate = delegate;
        }

        @Override
        public int markSent(LeaseToken lease, Collection<UUID> eventIds) {
            markSentEntered.set(true);
            CountDownLatch gate = markSentGate;
            if (gate != null) {
                waitFor(gate);
            }
            return delegate.markSent(lease, eventIds);
        }

        @Override
        public int release(LeaseToken lease, Collection<UUID> eventIds) {
            CountDownLatch gate = releaseGate;
            if (gate != null) {
                waitFor(gate);
            }
            Error error = releaseError;
            if (error != null) {
                throw error;
            }
            return delegate.release(lease, eventIds);
        }

    }
}
