package io.queuebox.domain;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Sixth adversarial review of the wake-ups, after 2b0f27b (peers plan no timer; worker 1 plans the interval from
 * the latest claim and the deadlines; the claim watch hands one ticket when worker 1 is not waiting).
 */
class DeliveryEngineWakeReview6Test {

    private final FakeOutboxStore fake = new FakeOutboxStore(Clock.systemUTC());
    private final FakePublisher publisher = new FakePublisher();
    private final RecordingListener listener = new RecordingListener();
    private final EngineHarness engines = new EngineHarness();

    @AfterEach
    void stopEngines() {
        engines.stopAll(publisher);
    }

    private static void pause(long millis) {
        await().pollDelay(Duration.ofMillis(millis)).atMost(Duration.ofMillis(millis + 5_000)).until(() -> true);
    }

    /** Claims that fail after {@code failAfterMillis} (a database timing out) while {@code outage} is set. */
    private static final class Failing extends ForwardingOutboxStore {
        final AtomicBoolean outage = new AtomicBoolean();
        final AtomicInteger failedClaims = new AtomicInteger();
        final long failAfterMillis;

        Failing(FakeOutboxStore delegate, long failAfterMillis) {
            super(delegate);
            this.failAfterMillis = failAfterMillis;
        }

        @Override
        public ClaimBatch claim(ClaimRequest request) {
            if (outage.get()) {
                failedClaims.incrementAndGet();
                try {
                    Thread.sleep(failAfterMillis);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                throw new IllegalStateException("connection timed out");
            }
            return super.claim(request);
        }
    }

    // ------------------------------------------------------------------------------------------------ A

    /**
     * An outage costs one claim per error pause, whatever the number of workers. In 2b0f27b the claim watch stands in
     * for worker 1 while it is not waiting, and worker 1 pausing after a failed claim is "not waiting": when a failed
     * claim takes longer than the watch's 10 ms grace (a database timing out), worker 1's pause ends more than 10 ms
     * after the interval since its claim started, so the watch hands a ticket to an idle peer, whose claim fails too:
     * the peer now pauses and claims again on its own after every pause (the FAILED path claims without asking
     * anyone), and so does the next peer the watch hands a ticket to. Soon every worker claims once per pause:
     * workers times the claims the outage should cost.
     */
    @ParameterizedTest(name = "depth {0}")
    @ValueSource(ints = {1, 2})
    void anOutageCostsOneClaimPerPauseWhateverTheWorkers(int depth) {
        Failing store = new Failing(fake, 60);
        Duration interval = Duration.ofMillis(300); // the error pause too (below 1 s)
        engines.start(DeliveryEngine.builder(), store, publisher, listener,
                EngineHarness.oneWorker(depth, interval).workers(3));
        await().atMost(EngineHarness.SOON).until(() -> fake.claimCalls.get() >= 3);
        pause(400);
        store.outage.set(true);
        pause(3_000);
        int failed = store.failedClaims.get();
        // Worker 1 alone: one claim per 300 ms pause plus 60 ms failing: about 8 in 3 s; allow 12.
        assertThat(failed).as("failed claims in 3 s of outage, error pause 300 ms, claims failing after 60 ms, 3 workers")
                .isLessThanOrEqualTo(12);
    }
}
