package io.queuebox.testkit.endtoend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.domain.DeliveryEngine;
import io.queuebox.domain.DeliverySettings;
import io.queuebox.domain.RetryPolicy;
import io.queuebox.domain.RowStatus;
import io.queuebox.ports.AggregateRef;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.Ordering;
import io.queuebox.testkit.fixtures.OutboxFixtures;
import io.queuebox.testkit.outbox.InMemoryOutboxStore;
import io.queuebox.testkit.publisher.RecordingPublisher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The domain engine end to end on the in-memory store and the recording publisher: two engines drain
 * one outbox while the publisher fails at random, and nothing is lost or reordered.
 */
class DeliveryEngineEndToEndTest {

    private static final int AGGREGATES = 100;
    private static final int EVENTS_PER_AGGREGATE = 100;

    @Test
    void twoEnginesDeliverEveryEventAtLeastOnceInOrderPerAggregateDespiteRandomFailures() {
        InMemoryOutboxStore store = InMemoryOutboxStore.create();
        List<OutboxEvent> written = OutboxFixtures.interleavedEvents(AGGREGATES, EVENTS_PER_AGGREGATE);
        store.enqueueAll(written);
        RecordingPublisher publisher = RecordingPublisher.acking().failRandomly(0.05, new Random(20261129L));

        DeliveryEngine first = engine(store, publisher, "engine-a");
        DeliveryEngine second = engine(store, publisher, "engine-b");
        first.start();
        second.start();
        try {
            await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(100))
                    .until(() -> store.rows().stream().allMatch(row -> row.status() == RowStatus.SENT));
        } finally {
            assertThat(first.stop(Duration.ofSeconds(10))).isTrue();
            assertThat(second.stop(Duration.ofSeconds(10))).isTrue();
        }

        assertThat(store.rows()).hasSize(written.size())
                .allSatisfy(row -> assertThat(row.status()).isEqualTo(RowStatus.SENT));
        List<OutboxEvent> delivered = publisher.delivered();
        assertThat(delivered.stream().map(OutboxEvent::eventId).distinct().count())
                .as("every event published at least once").isEqualTo(written.size());
        assertThat(publisher.attempts().size()).as("the random failures really happened")
                .isGreaterThan(written.size());
        assertThat(firstDeliveriesPerAggregate(delivered)).as("order of first deliveries per aggregate")
                .isEqualTo(idsPerAggregate(written));
    }

    private static DeliveryEngine engine(InMemoryOutboxStore store, RecordingPublisher publisher, String owner) {
        DeliverySettings settings = DeliverySettings.builder()
                .owner(owner)
                .batchSize(100)
                .workers(2)
                .wakeInterval(Duration.ofMillis(20))
                .leaseLength(Duration.ofSeconds(5))
                .ordering(Ordering.PER_AGGREGATE)
                .retryPolicy(RetryPolicy.exponential(Duration.ofMillis(2), 2.0, Duration.ofMillis(20), 0.2, 1000))
                .build();
        return DeliveryEngine.builder().store(store).publisher(publisher).settings(settings).build();
    }

    private static Map<AggregateRef, List<UUID>> firstDeliveriesPerAggregate(List<OutboxEvent> delivered) {
        Set<UUID> seen = new LinkedHashSet<>();
        Map<AggregateRef, List<UUID>> firsts = new LinkedHashMap<>();
        for (OutboxEvent event : delivered) {
            if (seen.add(event.eventId())) {
                firsts.computeIfAbsent(event.aggregate(), a -> new ArrayList<>()).add(event.eventId());
            }
        }
        return firsts;
    }

    private static Map<AggregateRef, List<UUID>> idsPerAggregate(List<OutboxEvent> written) {
        Map<AggregateRef, List<UUID>> ids = new LinkedHashMap<>();
        for (OutboxEvent event : written) {
            ids.computeIfAbsent(event.aggregate(), a -> new ArrayList<>()).add(event.eventId());
        }
        return ids;
    }
}
