package io.queuebox.domain;

import static io.queuebox.domain.Fixtures.anEventFor;
import static io.queuebox.domain.Fixtures.order;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.OutboxEvent;
import java.time.Clock;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A claim whose answer came back after its lease had lapsed (a pause of the relay, a stalled network, a database
 * that answered late): another claimer may own its rows by then. The stage of a pipelined engine already refused to
 * publish a batch whose lease lapsed while it waited; the serial engine published right after the claim, whatever
 * the claim had taken (found while reviewing the held claim's late lock answer, PostgresLateLockResultTurnEndReviewTest).
 */
class DeliveryEngineLateClaimTest {

    private static final Duration LEASE = Duration.ofMillis(300);

    private final FakeOutboxStore fake = new FakeOutboxStore(Clock.systemUTC());
    private final FakePublisher publisher = new FakePublisher();
    private final RecordingListener listener = new RecordingListener();
    private final EngineHarness engines = new EngineHarness();

    @AfterEach
    void stopEngines() {
        engines.stopAll(publisher);
    }

    @Test
    void aBatchClaimedAfterItsLeaseLapsedIsNotPublished() {
        OutboxEvent event = anEventFor(order("a"));
        fake.add(event);
        UUID a = event.eventId();
        AtomicBoolean late = new AtomicBoolean(true);
        AtomicBoolean lateAnswerGiven = new AtomicBoolean();
        ForwardingOutboxStore store = new ForwardingOutboxStore(fake) {
            @Override
            public ClaimBatch claim(ClaimRequest request) {
                ClaimBatch batch = super.claim(request);
                if (!batch.isEmpty() && late.compareAndSet(true, false)) {
                    // The answer takes longer than the lease; meanwhile another relay claims the row.
                    sleep(LEASE.plusMillis(100));
                    fake.stealLease(a, Duration.ofSeconds(30));
                    lateAnswerGiven.set(true);
                }
                return batch;
            }
        };
        engines.start(DeliveryEngine.builder(), store, publisher, listener,
                EngineHarness.oneWorker(1, EngineHarness.LONG_INTERVAL).batchSize(1).leaseLength(LEASE));

        await().atMost(EngineHarness.SOON).until(lateAnswerGiven::get);
        await().alias("a, claimed by a claim that came back after its lease lapsed, is not published")
                .during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(1)).until(() -> !publisher.attempted.contains(a));
        assertThat(listener.errors).as("what the relay reported").anySatisfy(error -> assertThat(error)
                .contains("claim").contains("another claimer took 1 of its 1 rows meanwhile"));
    }

    private static void sleep(Duration duration) {
        try {
            Thread.sleep(duration.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
