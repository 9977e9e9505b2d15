package io.queuebox.kafka;

import static io.queuebox.kafka.KafkaFixtures.anEventOf;
import static io.queuebox.kafka.KafkaFixtures.deliveriesOf;
import static io.queuebox.kafka.KafkaFixtures.publisher;
import static io.queuebox.kafka.KafkaFixtures.readBack;
import static io.queuebox.kafka.KafkaFixtures.uniqueName;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.InstanceOfAssertFactories.MAP;
import static org.awaitility.Awaitility.await;

import io.queuebox.kafka.testing.InProcessKafka;
import io.queuebox.ports.Health;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A topic that does not exist, on a broker that creates none (as most production clusters are set up): only
 * the records to that topic are held back, retriable (charged, with backoff, so propagation delay never
 * parks them) and named in health; everything else in the batch is delivered, and once the topic exists its
 * events go through.
 */
class KafkaMissingTopicTest {

    private static InProcessKafka kafka;

    @BeforeAll
    static void startABrokerThatCreatesNoTopic() {
        kafka = InProcessKafka.startDedicated(Map.of("auto.create.topics.enable", "false"));
    }

    @AfterAll
    static void stopTheBroker() {
        kafka.close();
    }

    @Test
    void aMissingTopicHoldsBackOnlyItsOwnRecordsAndShowsInHealthByName() {
        String present = uniqueName("present");
        String absent = uniqueName("absent");
        KafkaFixtures.createTopic(kafka.bootstrap(), present);
        List<OutboxEvent> batch = new ArrayList<>();
        for (int round = 0; round < 3; round++) {
            for (int aggregate = 0; aggregate < 10; aggregate++) {
                batch.add(anEventOf("order", "o-" + aggregate, "e" + round + "-" + aggregate)
                        .withDestination(aggregate == 3 ? absent : present));
            }
        }
        try (KafkaMessagePublisher publisher = publisher(kafka.bootstrap(), Map.of("publish.timeout.ms", "10000"))) {
            List<PublishOutcome> outcomes = publisher.publish(deliveriesOf(batch));

            for (int i = 0; i < batch.size(); i++) {
                OutboxEvent event = batch.get(i);
                if (!event.aggregateId().equals("o-3")) {
                    assertThat(outcomes.get(i)).as("%s to %s", event.aggregateId(), present)
                            .isInstanceOf(PublishOutcome.Acked.class);
                }
            }
            assertThat(outcomes.get(3)).isInstanceOfSatisfying(PublishOutcome.RetriableFailure.class, failure ->
                    assertThat(failure.reason()).contains("topic '" + absent + "' does not exist")
                            .contains("UnknownTopicOrPartitionException"));
            assertThat(List.of(outcomes.get(13), outcomes.get(23))).as("the later events of o-3")
                    .allSatisfy(o -> assertThat(o).isInstanceOf(PublishOutcome.NotAttempted.class));
            assertThat(readBack(kafka.bootstrap(), present, 27, Duration.ofSeconds(20))).hasSize(27);
            Health health = publisher.health();
            assertThat(health.isUp()).isFalse();
            assertThat(health.detail()).contains(absent).doesNotContain(present);
            assertThat(health.details()).containsKey(Health.MISSING_DESTINATIONS);
            assertThat(health.details().get(Health.MISSING_DESTINATIONS)).asInstanceOf(MAP).containsOnlyKeys(absent);

            // Known missing now: the next call answers its records at once instead of waiting for metadata again.
            long start = System.nanoTime();
            List<PublishOutcome> retry = publisher.publish(deliveriesOf(List.of(batch.get(3), batch.get(4))));
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));
            assertThat(retry.get(0)).isInstanceOf(PublishOutcome.RetriableFailure.class);
            assertThat(retry.get(1).isAcked()).isTrue();

            KafkaFixtures.createTopic(kafka.bootstrap(), absent);
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200)).until(() -> publisher
                    .publish(deliveriesOf(List.of(batch.get(3), batch.get(13), batch.get(23))))
                    .stream().allMatch(PublishOutcome::isAcked));
            assertThat(publisher.health().isUp()).as("health once the topic exists: %s", publisher.health()).isTrue();
        }
    }
}
