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
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Review of the serial engine's late-claim rule (1a46de6): a claim answered more than two thirds of the lease after it
 * started is handed back unpublished and the cycle counts as failed. The rule measures from when the claim started,
 * not from when the store set the lease, and nothing changes between attempts: a relay whose claims steadily take
 * between 2/3 and all of the lease (a slow claim query under a backlog, a wait for the turn to choose, parking at claim,
 * a held claim's several rounds whose last one is fast) never publishes anything again, though every batch it claims
 * still holds a valid lease (here: a whole lease left when the claim answers). Before the change these batches were
 * published, the renewer renewing their lease at once.
 */
class DeliveryEngineLateClaimReviewTest {

    private static final Duration LEASE = Duration.ofMillis(600);
    /** Three quarters of the lease: past the 2/3 the rule allows, well within the lease. */
    private static final Duration SLOW_CLAIM = Duration.ofMillis(450);

    private final FakeOutboxStore fake = new FakeOutboxStore(Clock.systemUTC());
    private final FakePublisher publisher = new FakePublisher();
    private final RecordingListener listener = new RecordingListener();
    private final EngineHarness engines = new EngineHarness();

    @AfterEach
    void stopEngines() {
        engines.stopAll(publisher);
    }

    @Test
    void aRelayWhoseClaimsSteadilyTakeThreeQuartersOfTheLeaseStillDelivers() {
        OutboxEvent event = anEventFor(order("a"));
        fake.add(event);
        UUID a = event.eventId();
        AtomicInteger slowClaims = new AtomicInteger();
        ForwardingOutboxStore store = new ForwardingOutboxStore(fake) {
            @Override
            public ClaimBatch claim(ClaimRequest request) {
                // The slow part comes before the rows are leased: the fake leases them for a whole lease from the
                // moment the claim answers, so every batch handed out has its full lease left.
                sleep(SLOW_CLAIM);
                slowClaims.incrementAndGet();
                return super.claim(request);
            }
        };
        DeliveryEngine engine = engines.start(DeliveryEngine.builder(), store, publisher, listener,
                EngineHarness.oneWorker(1, Duration.ofMillis(100)).batchSize(1).leaseLength(LEASE));

        await().atMost(Duration.ofSeconds(3)).until(() -> slowClaims.get() >= 3);
        try {
            await().atMost(Duration.ofSeconds(5)).until(() -> publisher.acked.contains(a));
        } catch (org.awaitility.core.ConditionTimeoutException stillNot) {
            // reported below, with what the relay said meanwhile
        }
        assertThat(publisher.acked)
                .as("a, claimed again and again with a whole lease left each time, is published at last (claims: "
                        + slowClaims.get() + ", errors reported: " + listener.errors.size() + ", the latest: "
                        + (listener.errors.isEmpty() ? "none" : listener.errors.get(listener.errors.size() - 1))
                        + "; health: " + engine.health() + ")")
                .contains(a);
    }

    private static void sleep(Duration duration) {
        try {
            Thread.sleep(duration.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
