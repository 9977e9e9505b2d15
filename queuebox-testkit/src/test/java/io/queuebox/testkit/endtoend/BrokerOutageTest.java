package io.queuebox.testkit.endtoend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.domain.DeliveryEngine;
import io.queuebox.domain.DeliverySettings;
import io.queuebox.domain.RetryPolicy;
import io.queuebox.domain.RowStatus;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.testkit.fixtures.OutboxFixtures;
import io.queuebox.testkit.outbox.InMemoryOutboxStore;
import io.queuebox.testkit.publisher.RecordingPublisher;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * A broker that is down answers {@code NotAttempted}: an outage that outlasts the whole retry schedule
 * charges no attempt, parks nothing, and delivery resumes as soon as the broker is back, not at each
 * row's own backoff.
 */
class BrokerOutageTest {

    @Test
    void anOutageLongerThanTheRetryScheduleParksNothingAndDeliveryResumesAtOnce() {
        InMemoryOutboxStore store = InMemoryOutboxStore.create();
        List<OutboxEvent> written = OutboxFixtures.interleavedEvents(20, 5);
        store.enqueueAll(written);
        AtomicBoolean down = new AtomicBoolean(true);
        RecordingPublisher publisher = RecordingPublisher.acking();
        publisher.when(delivery -> down.get()).skip("broker unavailable");
        // Two attempts and then park, with a 1-hour backoff: one charged attempt would hold a row for an hour.
        RetryPolicy policy = RetryPolicy.exponential(Duration.ofHours(1), 2.0, Duration.ofHours(1), 0.0, 2);
        DeliveryEngine engine = DeliveryEngine.builder().store(store).publisher(publisher)
                .settings(DeliverySettings.builder().owner("outage").batchSize(50).workers(2)
                        .wakeInterval(Duration.ofMillis(20)).leaseLength(Duration.ofSeconds(5))
                        .ordering(Ordering.PER_AGGREGATE).parkingPolicy(ParkingPolicy.HOLD_AGGREGATE)
                        .retryPolicy(policy).build())
                .build();
        engine.start();
        try {
            await().atMost(Duration.ofSeconds(10))
                    .until(() -> publisher.attempts().size() >= 5 * written.size());

            assertThat(store.rows()).as("the outage charged nothing and parked nothing")
                    .allSatisfy(row -> {
                        assertThat(row.status()).isEqualTo(RowStatus.PENDING);
                        assertThat(row.attempts()).isZero();
                    });

            down.set(false);
            await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(20))
                    .until(() -> store.rows().stream().allMatch(row -> row.status() == RowStatus.SENT));
        } finally {
            assertThat(engine.stop(Duration.ofSeconds(10))).isTrue();
        }
        assertThat(publisher.delivered()).hasSize(written.size());
    }
}
