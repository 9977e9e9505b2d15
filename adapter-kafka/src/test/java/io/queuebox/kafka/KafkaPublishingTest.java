package io.queuebox.kafka;

import static io.queuebox.kafka.KafkaFixtures.anEventOf;
import static io.queuebox.kafka.KafkaFixtures.deliveriesOf;
import static io.queuebox.kafka.KafkaFixtures.header;
import static io.queuebox.kafka.KafkaFixtures.publisher;
import static io.queuebox.kafka.KafkaFixtures.readBack;
import static io.queuebox.kafka.KafkaFixtures.text;
import static io.queuebox.kafka.KafkaFixtures.uniqueName;
import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.kafka.testing.InProcessKafka;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Against the real (in-process) broker: what a consumer reads back is what the outcomes say. */
class KafkaPublishingTest {

    private static String bootstrap;
    private static KafkaMessagePublisher publisher;

    @BeforeAll
    static void start() {
        bootstrap = InProcessKafka.bootstrapServers();
        publisher = publisher(bootstrap, Map.of());
    }

    @AfterAll
    static void stop() {
        publisher.close();
    }

    @Test
    void aConsumerReadsKeyPayloadAndHeadersOfEveryMessageInAggregateOrder() {
        String type = uniqueName("order");
        List<OutboxEvent> events = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            events.add(anEventOf(type, "agg-" + (i % 4), "payload-" + i)
                    .withHeaders(Map.of("traceparent", "00-trace-" + i + "-01", "event-id", "forged", "ce_type", "app's own")));
        }

        List<PublishOutcome> outcomes = publisher.publish(deliveriesOf(events));

        assertThat(outcomes).allMatch(PublishOutcome::isAcked);
        assertThat(outcomes).extracting(PublishOutcome::eventId)
                .containsExactlyElementsOf(events.stream().map(OutboxEvent::eventId).toList());
        List<ConsumerRecord<String, byte[]>> records = readBack(bootstrap, "outbox.event." + type, 20,
                Duration.ofSeconds(20));
        assertThat(records).hasSize(20);
        for (ConsumerRecord<String, byte[]> record : records) {
            OutboxEvent sent = events.stream().filter(e -> e.eventId().toString().equals(header(record, "event-id")))
                    .findFirst().orElseThrow();
            assertThat(record.key()).isEqualTo(sent.aggregateId());
            assertThat(text(record)).isEqualTo(new String(sent.payload()));
            assertThat(header(record, "event-type")).isEqualTo("Changed");
            assertThat(header(record, "aggregate-type")).isEqualTo(type);
            assertThat(header(record, "aggregate-id")).isEqualTo(sent.aggregateId());
            assertThat(header(record, "content-type")).isEqualTo("application/json");
            assertThat(header(record, "traceparent")).isEqualTo(sent.headers().get("traceparent"));
            assertThat(record.headers().headers("event-id")).hasSize(1);
            assertThat(header(record, "ce_id")).isNull();
            assertThat(header(record, "ce_type")).as("CloudEvents headers are QueueBox's only when enabled")
                    .isEqualTo("app's own");
        }
        Map<String, List<String>> seenPerAggregate = records.stream().collect(Collectors.groupingBy(
                ConsumerRecord::key, Collectors.mapping(KafkaFixtures::text, Collectors.toList())));
        for (int a = 0; a < 4; a++) {
            int aggregate = a;
            assertThat(seenPerAggregate.get("agg-" + a)).containsExactlyElementsOf(IntStream.range(0, 20)
                    .filter(i -> i % 4 == aggregate).mapToObj(i -> "payload-" + i).toList());
        }
    }

    @Test
    void aDestinationOverrideWinsOverTheTemplateAndCloudEventsHeadersAreAddedWhenEnabled() {
        String topic = uniqueName("explicit");
        try (KafkaMessagePublisher cloudEvents = publisher(bootstrap,
                Map.of("cloudevents.enabled", "true", "cloudevents.source", "/shop/orders"))) {
            // Every header QueueBox sets, forged by the application: each must come out once, QueueBox's.
            List<String> own = List.of("event-id", "event-type", "aggregate-type", "aggregate-id", "content-type",
                    "ce_specversion", "ce_id", "ce_source", "ce_type", "ce_subject", "ce_time");
            Map<String, String> forged = new HashMap<>();
            own.forEach(name -> forged.put(name, "forged"));
            forged.put("x-tenant", "t-7");
            OutboxEvent event = anEventOf("order", "o-1", "{}").withDestination(topic).withContentType("text/plain")
                    .withHeaders(forged);

            assertThat(cloudEvents.publish(deliveriesOf(List.of(event)))).allMatch(PublishOutcome::isAcked);

            ConsumerRecord<String, byte[]> record = readBack(bootstrap, topic, 1, Duration.ofSeconds(20)).get(0);
            assertThat(header(record, "ce_specversion")).isEqualTo("1.0");
            assertThat(header(record, "ce_id")).isEqualTo(event.eventId().toString());
            assertThat(header(record, "ce_source")).isEqualTo("/shop/orders");
            assertThat(header(record, "ce_type")).isEqualTo("Changed");
            assertThat(header(record, "ce_time")).isEqualTo("2026-01-02T03:04:05Z");
            assertThat(header(record, "content-type")).isEqualTo("text/plain");
            for (String name : own) {
                assertThat(record.headers().headers(name)).as("QueueBox's %s wins over the application's", name).hasSize(1);
                assertThat(header(record, name)).as(name).isNotEqualTo("forged");
            }
            assertThat(header(record, "x-tenant")).isEqualTo("t-7");
        }
    }

    @Test
    void aFixedTopicTakesEveryEventWithoutOverride() {
        String topic = uniqueName("fixed");
        try (KafkaMessagePublisher fixed = publisher(bootstrap, Map.of("topic", topic))) {
            List<OutboxEvent> events = List.of(anEventOf("order", "1", "a"), anEventOf("invoice", "2", "b"));

            assertThat(fixed.publish(deliveriesOf(events))).allMatch(PublishOutcome::isAcked);

            assertThat(readBack(bootstrap, topic, 2, Duration.ofSeconds(20))).extracting(KafkaFixtures::text)
                    .containsExactlyInAnyOrder("a", "b");
        }
    }

    @Test
    void whenTheThirdOfFiveFailsTheLaterOnesAreNotSentAndTheRetryDeliversTheRestInOrder() {
        String topic = uniqueName("ordered");
        List<OutboxEvent> events = new ArrayList<>();
        for (int i = 1; i <= 5; i++) {
            events.add(anEventOf("order", "o-42", "event-" + i).withDestination(topic));
        }
        // An illegal topic name makes the broker refuse the third event permanently.
        OutboxEvent third = events.get(2);
        List<OutboxEvent> firstTry = new ArrayList<>(events);
        firstTry.set(2, third.withDestination("not a legal topic!"));

        List<PublishOutcome> outcomes = publisher.publish(deliveriesOf(firstTry));

        assertThat(outcomes.subList(0, 2)).allMatch(PublishOutcome::isAcked);
        assertThat(outcomes.get(2)).isInstanceOfSatisfying(PublishOutcome.PermanentFailure.class,
                failure -> assertThat(failure.reason()).contains("InvalidTopicException"));
        assertThat(outcomes.subList(3, 5)).allSatisfy(outcome -> assertThat(outcome)
                .isInstanceOfSatisfying(PublishOutcome.NotAttempted.class,
                        failure -> assertThat(failure.reason()).startsWith("not attempted")));
        assertThat(readBack(bootstrap, topic, 2, Duration.ofSeconds(20))).extracting(KafkaFixtures::text)
                .containsExactly("event-1", "event-2");

        // The retry (the third event repaired, as after an operator's fix) continues where the aggregate stopped.
        assertThat(publisher.publish(deliveriesOf(events.subList(2, 5)))).allMatch(PublishOutcome::isAcked);
        assertThat(readBack(bootstrap, topic, 5, Duration.ofSeconds(20))).extracting(KafkaFixtures::text)
                .containsExactly("event-1", "event-2", "event-3", "event-4", "event-5");
    }

    @Test
    void aRecordLargerThanTheProducerAllowsIsAPermanentFailureAndOtherAggregatesStillArrive() {
        String topic = uniqueName("large");
        try (KafkaMessagePublisher small = publisher(bootstrap, Map.of("producer.max.request.size", "2048"))) {
            OutboxEvent large = anEventOf("order", "big", "x".repeat(4096)).withDestination(topic);
            OutboxEvent later = anEventOf("order", "big", "after").withDestination(topic);
            OutboxEvent other = anEventOf("order", "other", "fine").withDestination(topic);

            List<PublishOutcome> outcomes = small.publish(deliveriesOf(List.of(large, later, other)));

            assertThat(outcomes.get(0)).isInstanceOfSatisfying(PublishOutcome.PermanentFailure.class,
                    failure -> assertThat(failure.reason()).contains("RecordTooLargeException"));
            assertThat(outcomes.get(1)).isInstanceOf(PublishOutcome.NotAttempted.class);
            assertThat(outcomes.get(2).isAcked()).isTrue();
            assertThat(readBack(bootstrap, topic, 1, Duration.ofSeconds(20))).extracting(KafkaFixtures::text)
                    .containsExactly("fine");
        }
    }

    @Test
    void publishAfterCloseIsRefused() {
        KafkaMessagePublisher closing = publisher(bootstrap, Map.of());
        closing.close();
        closing.close();

        org.assertj.core.api.Assertions.assertThatIllegalStateException()
                .isThrownBy(() -> closing.publish(deliveriesOf(List.of(anEventOf("order", "1", "x")))));
    }
}
