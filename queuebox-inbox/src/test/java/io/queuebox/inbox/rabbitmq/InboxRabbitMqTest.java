package io.queuebox.inbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.GetResponse;
import io.queuebox.inbox.Effects;
import io.queuebox.inbox.InboxConsumerListener;
import io.queuebox.inbox.InboxTestDatabase;
import io.queuebox.inbox.MissingEventIdException;
import io.queuebox.ports.InboxKey;
import io.queuebox.ports.InboxOutcome;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.rabbitmq.RabbitMqMessagePublisher;
import io.queuebox.rabbitmq.RabbitMqSettings;
import io.queuebox.testkit.fixtures.OutboxFixtures;
import io.queuebox.testkit.services.TestServices;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Outbox events published by QueueBox's real RabbitMQ publisher, consumed through the inbox into the real
 * PostgreSQL: each event's business row exists once, whatever is redelivered or crashes, and per-aggregate order
 * survives a requeue.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class InboxRabbitMqTest {

    private static final Duration PATIENCE = Duration.ofSeconds(30);

    private static InboxTestDatabase database;
    private static Connection amqp;
    private Channel admin;
    private String exchange;
    private String queue;
    private String deadLetters;
    private Effects effects;
    private final List<RabbitMqInboxConsumer> consumers = Collections.synchronizedList(new ArrayList<>());
    private final List<Connection> extraConnections = new ArrayList<>();

    @BeforeAll
    static void connect() throws Exception {
        String uri = TestServices.rabbitMqUri();
        database = InboxTestDatabase.withFreshSchema("inbox_rabbitmq");
        amqp = connection(uri, "queuebox-inbox-test");
    }

    @AfterAll
    static void disconnect() throws Exception {
        if (amqp != null) {
            amqp.close();
        }
        if (database != null) {
            database.close();
        }
    }

    @BeforeEach
    void freshTopology() throws Exception {
        String name = "inbox_" + UUID.randomUUID().toString().substring(0, 8);
        exchange = "queuebox-test-" + name;
        queue = exchange;
        deadLetters = exchange + ".dead";
        admin = amqp.createChannel();
        admin.exchangeDeclare(exchange, "topic", false, true, null);
        admin.exchangeDeclare(deadLetters, "fanout", false, true, null);
        admin.queueDeclare(deadLetters, false, false, false, null);
        admin.queueBind(deadLetters, deadLetters, "");
        admin.queueDeclare(queue, false, false, false, Map.of("x-dead-letter-exchange", deadLetters));
        admin.queueBind(queue, exchange, "#");
        effects = database.effects(name);
    }

    @AfterEach
    void removeTopology() throws Exception {
        consumers.forEach(RabbitMqInboxConsumer::close);
        for (Connection connection : extraConnections) {
            connection.abort();
        }
        admin.queueDelete(queue);
        admin.queueDelete(deadLetters);
        admin.exchangeDelete(exchange);
        admin.exchangeDelete(deadLetters);
        admin.close();
    }

    @Test
    void everyEventIsAppliedOnceInItsAggregatesOrderAndAcknowledgedAfterTheCommit() throws Exception {
        List<OutboxEvent> events = OutboxFixtures.interleavedEvents(3, 5);
        publish(events);

        consumer(amqp, handlerWriting("billing"), InboxConsumerListener.NOOP, OnFailure.REQUEUE).start();

        await().atMost(PATIENCE).until(() -> effects.count() >= events.size());
        assertThat(effects.applied()).containsExactlyInAnyOrderElementsOf(ids(events));
        assertThat(effects.appliedPerAggregate()).isEqualTo(expectedOrder(events));
        assertNothingLeftButDuplicates();
    }

    @Test
    void aHandlerCrashingAfterItsBusinessWriteIsRequeuedInPlaceAndAppliedOnceWithoutLaterMessagesOvertakingIt()
            throws Exception {
        List<OutboxEvent> events = OutboxFixtures.interleavedEvents(3, 5);
        UUID crashing = events.get(3).eventId();
        publish(events);

        AtomicInteger attempts = new AtomicInteger();
        consumer(amqp, (tx, delivery) -> {
            UUID id = eventId(delivery);
            effects.apply(tx, id, aggregateId(delivery), "billing");
            if (id.equals(crashing) && attempts.getAndIncrement() == 0) {
                throw new IllegalStateException("crashed after the business write, before the commit");
            }
        }, InboxConsumerListener.NOOP, OnFailure.REQUEUE).start();

        await().atMost(PATIENCE).until(() -> effects.count() >= events.size());
        assertNothingLeftButDuplicates();
        assertThat(attempts.get()).as("the crashing message came back once").isEqualTo(2);
        assertThat(effects.applied()).containsExactlyInAnyOrderElementsOf(ids(events));
        assertThat(effects.appliedPerAggregate()).isEqualTo(expectedOrder(events));
    }

    @Test
    void aCrashAfterTheCommitAndBeforeTheAckMakesTheBrokerRedeliverAndTheInboxAnswersADuplicate() throws Exception {
        List<OutboxEvent> events = OutboxFixtures.interleavedEvents(2, 3);
        UUID crashing = events.get(2).eventId();
        publish(events);

        // The first process dies after its commit, before its ack: the listener runs between the two.
        Connection doomed = connection(TestServices.rabbitMqUri(), "queuebox-inbox-doomed");
        extraConnections.add(doomed);
        consumer(doomed, handlerWriting("crashed"), new InboxConsumerListener() {
            @Override
            public void handled(String message, InboxKey key, InboxOutcome outcome) {
                if (key.eventId().equals(crashing)) {
                    doomed.abort(1000);
                    throw new IllegalStateException("the process died after the commit, before the ack");
                }
            }
        }, OnFailure.REQUEUE).start();
        await().atMost(PATIENCE).until(() -> effects.applied().contains(crashing));

        Map<UUID, InboxOutcome> outcomes = new ConcurrentHashMap<>();
        consumer(amqp, handlerWriting("restarted"), recording(outcomes), OnFailure.REQUEUE).start();

        await().atMost(PATIENCE).until(() -> effects.count() >= events.size() && outcomes.containsKey(crashing));
        assertNothingLeftButDuplicates();
        assertThat(outcomes.get(crashing)).isEqualTo(InboxOutcome.DUPLICATE);
        assertThat(effects.applied()).containsExactlyInAnyOrderElementsOf(ids(events));
    }

    @Test
    void twoConsumersRacingOnARedeliveredEventApplyItOnce() throws Exception {
        List<OutboxEvent> events = OutboxFixtures.interleavedEvents(5, 4);
        // Every event twice, back to back: the relay published again after a crash before it marked the row sent.
        List<OutboxEvent> twice = new ArrayList<>();
        for (OutboxEvent event : events) {
            twice.add(event);
            twice.add(event);
        }
        publishEach(twice);

        Map<UUID, List<InboxOutcome>> outcomes = new ConcurrentHashMap<>();
        InboxConsumerListener listener = new InboxConsumerListener() {
            @Override
            public void handled(String message, InboxKey key, InboxOutcome outcome) {
                outcomes.computeIfAbsent(key.eventId(), k -> new CopyOnWriteArrayList<>()).add(outcome);
            }
        };
        consumer(amqp, handlerWriting("first"), listener, OnFailure.REQUEUE, 1).start();
        Connection second = connection(TestServices.rabbitMqUri(), "queuebox-inbox-second");
        extraConnections.add(second);
        consumer(second, handlerWriting("second"), listener, OnFailure.REQUEUE, 1).start();

        await().atMost(PATIENCE).until(() -> outcomes.values().stream().mapToInt(List::size).sum() == twice.size());
        assertThat(effects.applied()).containsExactlyInAnyOrderElementsOf(ids(events));
        assertThat(outcomes.values()).allSatisfy(answers ->
                assertThat(answers).containsExactlyInAnyOrder(InboxOutcome.PROCESSED, InboxOutcome.DUPLICATE));
    }

    @Test
    void withDeadLetterAFailingMessageGoesToTheDeadLetterQueueAndLaterMessagesGoOn() throws Exception {
        List<OutboxEvent> events = OutboxFixtures.interleavedEvents(2, 3);
        UUID poison = events.get(1).eventId();
        publish(events);

        consumer(amqp, (tx, delivery) -> {
            if (eventId(delivery).equals(poison)) {
                throw new IllegalArgumentException("cannot handle this one");
            }
            effects.apply(tx, eventId(delivery), aggregateId(delivery), "billing");
        }, InboxConsumerListener.NOOP, OnFailure.DEAD_LETTER).start();

        await().atMost(PATIENCE).until(() -> effects.count() >= events.size() - 1 && messagesIn(deadLetters) == 1);
        GetResponse dead = admin.basicGet(deadLetters, true);
        assertThat(dead.getProps().getMessageId()).isEqualTo(poison.toString());
        assertThat(effects.applied()).doesNotContain(poison).hasSize(events.size() - 1);
    }

    @Test
    void aMessageWithoutMessageIdIsRejectedToTheDeadLettersNamingThePropertyAndTheRestGoesOn() throws Exception {
        admin.basicPublish(exchange, "order.x", new AMQP.BasicProperties.Builder().build(), "{}".getBytes());
        List<OutboxEvent> events = OutboxFixtures.interleavedEvents(1, 2);
        publish(events);

        List<MissingEventIdException> rejected = new CopyOnWriteArrayList<>();
        consumer(amqp, handlerWriting("billing"), new InboxConsumerListener() {
            @Override
            public void rejected(String message, MissingEventIdException reason) {
                rejected.add(reason);
            }
        }, OnFailure.REQUEUE).start();

        await().atMost(PATIENCE).until(() -> effects.count() >= events.size() && messagesIn(deadLetters) == 1);
        assertThat(rejected).singleElement().satisfies(reason -> assertThat(reason.getMessage())
                .contains("no message-id property")
                .contains("queue " + queue));
        assertThat(effects.applied()).containsExactlyInAnyOrderElementsOf(ids(events));
    }

    @Test
    void thePropertyReadIsTheOneQueueBoxsRabbitMqPublisherSets() throws Exception {
        OutboxEvent event = OutboxFixtures.anEvent();
        publish(List.of(event));
        await().atMost(PATIENCE).until(() -> messagesIn(queue) == 1);

        GetResponse message = admin.basicGet(queue, true);
        assertThat(RabbitMqInboxConsumer.EVENT_ID_PROPERTY).isEqualTo("message-id");
        assertThat(message.getProps().getMessageId()).isEqualTo(event.eventId().toString());
    }

    @Test
    void startingTwiceIsRefusedRatherThanLeavingAChannelWhoseMessagesNobodyAcknowledges() throws Exception {
        RabbitMqInboxConsumer consumer = consumer(amqp, handlerWriting("billing"), InboxConsumerListener.NOOP,
                OnFailure.REQUEUE);
        consumer.start();

        assertThatThrownBy(consumer::start).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("queue " + queue).hasMessageContaining("consuming already");
    }

    // ------------------------------------------------------------------------------------- helpers

    private static Connection connection(String uri, String name) throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(uri);
        factory.setAutomaticRecoveryEnabled(false);
        return factory.newConnection(name);
    }

    private void publish(List<OutboxEvent> events) {
        RabbitMqMessagePublisher publisher = RabbitMqMessagePublisher.create(RabbitMqSettings.builder()
                .uri(TestServices.rabbitMqUri()).exchange(exchange).build());
        try {
            List<PublishOutcome> outcomes = publisher.publish(OutboxFixtures.claimedDeliveriesOf(events));
            assertThat(outcomes).allMatch(outcome -> outcome instanceof PublishOutcome.Acked);
        } finally {
            publisher.close();
        }
    }

    /** One publish call per message, so the same event may appear twice in a row. */
    private void publishEach(List<OutboxEvent> events) {
        for (OutboxEvent event : events) {
            publish(List.of(event));
        }
    }

    private RabbitMqInboxConsumer consumer(Connection connection, RabbitMqInboxHandler handler,
            InboxConsumerListener listener, OnFailure onFailure) {
        return consumer(connection, handler, listener, onFailure, 10);
    }

    private RabbitMqInboxConsumer consumer(Connection connection, RabbitMqInboxHandler handler,
            InboxConsumerListener listener, OnFailure onFailure, int prefetch) {
        RabbitMqInboxConsumer consumer = RabbitMqInboxConsumer.builder("billing", database.inbox, database.dataSource,
                        connection, queue)
                .handler(handler)
                .listener(listener)
                .onFailure(onFailure)
                .prefetch(prefetch)
                .retryDelay(Duration.ofMillis(100))
                .build();
        consumers.add(consumer);
        return consumer;
    }

    private RabbitMqInboxHandler handlerWriting(String handledBy) {
        return (tx, delivery) -> effects.apply(tx, eventId(delivery), aggregateId(delivery), handledBy);
    }

    private static InboxConsumerListener recording(Map<UUID, InboxOutcome> outcomes) {
        return new InboxConsumerListener() {
            @Override
            public void handled(String message, InboxKey key, InboxOutcome outcome) {
                outcomes.put(key.eventId(), outcome);
            }
        };
    }

    private static UUID eventId(Delivery delivery) {
        return UUID.fromString(delivery.getProperties().getMessageId());
    }

    private static String aggregateId(Delivery delivery) {
        return String.valueOf(delivery.getProperties().getHeaders().get(RabbitMqMessagePublisher.HEADER_AGGREGATE_ID));
    }

    private long messagesIn(String name) throws Exception {
        return admin.queueDeclarePassive(name).getMessageCount();
    }

    /**
     * Closes the consumers (which returns whatever they had not acknowledged to the queue), then consumes what is
     * left with a fresh consumer: all of it must be answered as duplicates, and the business rows must not change.
     */
    private void assertNothingLeftButDuplicates() throws Exception {
        consumers.forEach(RabbitMqInboxConsumer::close);
        List<UUID> before = effects.applied();
        long left = messagesIn(queue);
        if (left > 0) {
            Map<UUID, InboxOutcome> outcomes = new ConcurrentHashMap<>();
            consumer(amqp, handlerWriting("leftover"), recording(outcomes), OnFailure.REQUEUE).start();
            await().atMost(PATIENCE).until(() -> outcomes.size() >= left);
            assertThat(Set.copyOf(outcomes.values())).containsExactly(InboxOutcome.DUPLICATE);
        }
        assertThat(effects.applied()).isEqualTo(before);
    }

    private static List<UUID> ids(List<OutboxEvent> events) {
        return events.stream().map(OutboxEvent::eventId).toList();
    }

    private static Map<String, List<UUID>> expectedOrder(List<OutboxEvent> events) {
        Map<String, List<UUID>> order = new HashMap<>();
        for (OutboxEvent event : events) {
            order.computeIfAbsent(event.aggregateId(), k -> new ArrayList<>()).add(event.eventId());
        }
        return order;
    }
}
