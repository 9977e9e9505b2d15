package io.queuebox.rabbitmq;

import static io.queuebox.testkit.fixtures.OutboxFixtures.anAggregateId;
import static io.queuebox.testkit.fixtures.OutboxFixtures.anEvent;
import static io.queuebox.testkit.fixtures.OutboxFixtures.claimedDeliveriesOf;
import static io.queuebox.testkit.fixtures.OutboxFixtures.eventsFor;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

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
            assertThat(outcomes.get(1)).isInstanceOfSatisfying(PublishOutcome.NotAttempted.class,
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
        int warmUps;
        try (RabbitMqMessagePublisher publisher = RabbitMqMessagePublisher.create(broker.settings()
                .routingKey("order.OrderChanged").set("confirm.timeout.ms", "20").build())) {
            // Connection, channel and exchange check first: their RPCs share the 20 ms and could use it all.
            await().atMost(WAIT).until(() -> publisher.publish(claimedDeliveriesOf(anEvent())).get(0).isAcked());
            warmUps = broker.awaitDeliveries(1, WAIT).size();
            outcomes = publisher.publish(claimedDeliveriesOf(events));
        }

        int firstFailure = outcomes.indexOf(outcomes.stream().filter(o -> !o.isAcked()).findFirst().orElseThrow());
        assertThat(outcomes.subList(0, firstFailure)).allMatch(PublishOutcome::isAcked);
        // Either a message was published and its confirm did not come in time (in doubt), or the time was up
        // between a confirm and the next publish (never sent).
        boolean inDoubt = outcomes.get(firstFailure) instanceof PublishOutcome.RetriableFailure;
        assertThat(outcomes.get(firstFailure)).satisfiesAnyOf(
                o -> assertThat(o).isInstanceOfSatisfying(PublishOutcome.RetriableFailure.class,
                        failure -> assertThat(failure.reason()).startsWith("no confirm from RabbitMQ within 20 ms")),
                o -> assertThat(o).isInstanceOfSatisfying(PublishOutcome.NotAttempted.class,
                        failure -> assertThat(failure.reason()).contains("(20 ms) passed before it was published")));
        assertThat(outcomes.subList(firstFailure + 1, outcomes.size())).allSatisfy(o -> assertThat(o)
                .isInstanceOfSatisfying(PublishOutcome.NotAttempted.class,
                        failure -> assertThat(failure.reason()).startsWith("not attempted")));
        // The one unconfirmed message may or may not have arrived; nothing after it was sent.
        List<Delivery> all = broker.awaitDeliveries(warmUps + firstFailure + 1, WAIT);
        List<Delivery> received = all.subList(warmUps, all.size());
        assertThat(received.size()).isBetween(firstFailure, firstFailure + (inDoubt ? 1 : 0));
        assertThat(received).extracting(d -> d.getProperties().getMessageId()).containsExactlyElementsOf(
                events.subList(0, received.size()).stream().map(e -> e.eventId().toString()).toList());
    }
}
