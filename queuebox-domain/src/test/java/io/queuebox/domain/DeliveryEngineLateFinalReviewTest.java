package io.queuebox.domain;

import static io.queuebox.domain.Fixtures.anEventFor;
import static io.queuebox.domain.Fixtures.order;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.OutboxEvent;
import java.time.Clock;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Final review of the late claim's renewal (DeliveryEngineLateClaimTest): what the serial fix left out.
 */
class DeliveryEngineLateFinalReviewTest {

    private static final Duration SHORT_LEASE = Duration.ofMillis(600);
    /** Three quarters of SHORT_LEASE: too late for the first renewal, well within the lease the store set. */
    private static final Duration SLOW_CLAIM = Duration.ofMillis(450);

    private final FakeOutboxStore fake = new FakeOutboxStore(Clock.systemUTC());
    private final FakePublisher publisher = new FakePublisher();
    private final RecordingListener listener = new RecordingListener();
    private final EngineHarness engines = new EngineHarness();

    @AfterEach
    void stopEngines() {
        engines.stopAll(publisher);
    }

    /**
     * Shutdown. Before the fix the serial worker checked for shutdown right after the claim and published at once;
     * now a whole store round trip (the synchronous renew, which can hang on a silent network) sits between that check
     * and the publish, and nothing checks again. Here the renew hangs until stop() has given up at its deadline
     * (renewer shut down, stop() returned false); when it answers (owned, in time for its own lease) the worker
     * publishes the batch anyway: a publish that starts after stop() returned, on a publisher its owner may be
     * closing, with no renewer for its lease. A batch whose publish had not started by the deadline is to be handed
     * back ("queued batches whose publish never started are released"; "a claim that returns after shutdown began
     * is released at once").
     */
    @Test
    void aBatchWhosePrePublishRenewalAnswersAfterStopReturnedIsNotPublished() throws Exception {
        OutboxEvent event = anEventFor(order("a"));
        fake.add(event);
        UUID a = event.eventId();
        AtomicBoolean slowOnce = new AtomicBoolean(true);
        AtomicBoolean hangOnce = new AtomicBoolean(true);
        CountDownLatch renewing = new CountDownLatch(1);
        CountDownLatch answer = new CountDownLatch(1);
        AtomicLong stopReturnedNanos = new AtomicLong();
        AtomicLong publishStartedNanos = new AtomicLong();
        ForwardingOutboxStore store = new ForwardingOutboxStore(fake) {
            @Override
            public ClaimBatch claim(ClaimRequest request) {
                if (slowOnce.getAndSet(false)) {
                    sleep(SLOW_CLAIM); // late claim: the engine renews before publishing
                }
                return super.claim(request);
            }

            @Override
            public int renew(LeaseToken lease, Duration leaseLength) {
                int owned = super.renew(lease, leaseLength);
                if (hangOnce.getAndSet(false)) {
                    renewing.countDown();
                    EngineHarness.waitFor(answer, 3_000); // the answer is stalled until stop() gave up
                }
                return owned;
            }
        };
        publisher.answer = d -> {
            publishStartedNanos.compareAndSet(0, System.nanoTime());
            return io.queuebox.ports.PublishOutcome.acked(d.eventId());
        };
        DeliveryEngine engine = engines.start(DeliveryEngine.builder(), store, publisher, listener,
                EngineHarness.oneWorker(1, EngineHarness.LONG_INTERVAL).batchSize(1).leaseLength(SHORT_LEASE));

        assertThat(renewing.await(3, TimeUnit.SECONDS)).as("the pre-publish renew started").isTrue();
        boolean inTime = engine.stop(Duration.ofMillis(50));
        stopReturnedNanos.set(System.nanoTime());
        assertThat(inTime).as("stop() gave up at its deadline: the worker was in the renew").isFalse();
        answer.countDown(); // the renew answers well within its lease: only the shutdown says no

        EngineHarness.pause(500);
        assertThat(publisher.attempted)
                .as("stop() returned (deadline passed, renewer shut down) before a's publish started; a publish "
                        + "starting " + (publishStartedNanos.get() == 0 ? "never"
                        : TimeUnit.NANOSECONDS.toMillis(publishStartedNanos.get() - stopReturnedNanos.get())
                        + " ms after stop() returned") + " must not happen: the batch goes back unpublished")
                .doesNotContain(a);
    }

    private static void sleep(Duration duration) {
        try {
            Thread.sleep(duration.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
