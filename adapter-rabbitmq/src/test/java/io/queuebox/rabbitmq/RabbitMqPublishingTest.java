package io.queuebox.rabbitmq;

import static io.queuebox.testkit.fixtures.OutboxFixtures.anAggregateId;
import static io.queuebox.testkit.fixtures.OutboxFixtures.anEvent;
import static io.queuebox.testkit.fixtures.OutboxFixtures.claimedDeliveriesOf;
import static io.queuebox.testkit.fixtures.OutboxFixtures.eventsFor;
import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Delivery;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** What a consumer of the real broker sees, beyond the contract: AMQP properties, routing, unroutable policy. */
class RabbitMqPublishingTest {

    private static final Duration WAIT = Duration.ofSeconds(10);

    private final RabbitMqTestBroker broker = new RabbitMqTestBroker("order.OrderChanged");

    @AfterEach
    void removeTheTopology() {
        broker.close();
    }

    @Test
    void messagesArePersistentWithEventIdTypeContentTypeHeadersAndTheDefaultRoutingKey() {
        OutboxEvent event = anEvent().withContentType("application/cloudevents+json");
        try (RabbitMqMessagePublisher publisher = RabbitMqMessagePublisher.create(broker.settings().build())) {
            assertThat(publisher.publish(claimedDeliveriesOf(event))).allMatch(PublishOutcome::isAcked);
            assertThat(publisher.health().isUp()).isTrue();
        }

        Delivery delivery = broker.awaitDeliveries(1, WAIT).get(0);
        assertThat(delivery.getEnvelope().getRoutingKey()).isEqualTo("order.OrderChanged");
        assertThat(delivery.getEnvelope().getExchange()).isEqualTo(broker.exchange);
        assertThat(delivery.getProperties().getDeliveryMode()).isEqualTo(2);
        assertThat(delivery.getProperties().getMessageId()).isEqualTo(event.eventId().toString());
        assertThat(delivery.getProperties().getType()).isEqualTo("OrderChanged");
        assertThat(delivery.getProperties().getContentType()).isEqualTo("application/cloudevents+json");
        assertThat(delivery.getProperties().getHeaders()).containsKeys("traceparent", "aggregate-type", "aggregate-id");
        assertThat(String.valueOf(delivery.getProperties().getHeaders().get("aggregate-id")))
                .isEqualTo(event.aggregateId());
        assertThat(delivery.getBody()).isEqualTo(event.payload());
    }

    @Test
    void theRoutingKeyTemplateAndADestinationOverrideChooseWhereAMessageGoes() {
        try (RabbitMqMessagePublisher publisher = RabbitMqMessagePublisher.create(broker.settings()
                .exchange("does-not-matter").routingKey("{aggregateType}.OrderChanged").build())) {
            OutboxEvent event = anEvent().withDestination(broker.exchange);

            assertThat(publisher.publish(claimedDeliveriesOf(event))).allMatch(PublishOutcome::isAcked);
        }

        assertThat(broker.awaitDeliveries(1, WAIT)).hasSize(1);
    }

    @Test
    void aMissingExchangeIsAPermanentFailureAndOtherAggregatesStillArrive() {
        OutboxEvent lost = anEvent().withDestination("queuebox-no-such-exchange");
        List<OutboxEvent> fine = eventsFor(anAggregateId(), 3);
        try (RabbitMqMessagePublisher publisher = RabbitMqMessagePublisher.create(broker.settings().build())) {
            List<PublishOutcome> outcomes = publisher.publish(claimedDeliveriesOf(
                    lost, fine.get(0), fine.get(1), fine.get(2)));

            assertThat(outcomes.get(0)).isInstanceOfSatisfying(PublishOutcome.PermanentFailure.class,
                    failure -> assertThat(failure.reason()).contains("queuebox-no-such-exchange"));
            assertThat(outcomes.subList(1, 4)).allMatch(PublishOutcome::isAcked);
        }
        assertThat(broker.awaitDeliveries(3, WAIT)).extracting(d -> d.getProperties().getMessageId())
                .containsExactlyElementsOf(fine.stream().map(e -> e.eventId().toString()).toList());
    }

    @Test
    void unroutableMessagesCanBeConfiguredRetriable() {
        try (RabbitMqMessagePublisher publisher = RabbitMqMessagePublisher.create(broker.settings()
                .routingKey("nobody.listens").set("unroutable", "retriable").build())) {
            List<PublishOutcome> outcomes = publisher.publish(claimedDeliveriesOf(eventsFor(anAggregateId(), 2)));

            assertThat(outcomes.get(0)).isInstanceOfSatisfying(PublishOutcome.RetriableFailure.class,
                    failure -> assertThat(failure.reason()).startsWith("unroutable"));
            assertThat(outcomes.get(1)).isInstanceOfSatisfying(PublishOutcome.RetriableFailure.class,
                    failure -> assertThat(failure.reason()).startsWith("not attempted"));
        }
    }

    @Test
    void withoutMandatoryAnUnroutableMessageIsAckedByTheBroker() {
        try (RabbitMqMessagePublisher publisher = RabbitMqMessagePublisher.create(broker.settings()
                .routingKey("nobody.listens").set("mandatory", "false").build())) {
            assertThat(publisher.publish(claimedDeliveriesOf(anEvent()))).allMatch(PublishOutcome::isAcked);
        }
    }

    @Test
    void aConfirmTimeoutFailsExactlyTheUnconfirmedMessageAndLeavesTheRestNotAttempted() {
        // 300 messages of one aggregate need 300 confirm round trips: far more than 20 ms.
        List<OutboxEvent> events = eventsFor(anAggregateId(), 300);
        List<PublishOutcome> outcomes;
        try (RabbitMqMessagePublisher publisher = RabbitMqMessagePublisher.create(broker.settings()
                .routingKey("order.OrderChanged").set("confirm.timeout.ms", "20").build())) {
            outcomes = publisher.publish(claimedDeliveriesOf(events));
        }

        int firstFailure = outcomes.indexOf(outcomes.stream().filter(o -> !o.isAcked()).findFirst().orElseThrow());
        assertThat(outcomes.subList(0, firstFailure)).allMatch(PublishOutcome::isAcked);
        assertThat(outcomes.get(firstFailure)).isInstanceOfSatisfying(PublishOutcome.RetriableFailure.class,
                failure -> assertThat(failure.reason()).startsWith("no confirm from RabbitMQ within 20 ms"));
        assertThat(outcomes.subList(firstFailure + 1, outcomes.size())).allSatisfy(o -> assertThat(o)
                .isInstanceOfSatisfying(PublishOutcome.RetriableFailure.class,
                        failure -> assertThat(failure.reason()).startsWith("not attempted")));
        // The one unconfirmed message may or may not have arrived; nothing after it was sent.
        List<Delivery> received = broker.awaitDeliveries(firstFailure + 1, WAIT);
        assertThat(received.size()).isBetween(firstFailure, firstFailure + 1);
        assertThat(received).extracting(d -> d.getProperties().getMessageId()).containsExactlyElementsOf(
                events.subList(0, received.size()).stream().map(e -> e.eventId().toString()).toList());
    }
}
