package io.queuebox.inbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.queuebox.inbox.Effects;
import io.queuebox.inbox.InboxConsumerListener;
import io.queuebox.inbox.InboxTestDatabase;
import io.queuebox.inbox.MissingEventIdException;
import io.queuebox.kafka.KafkaMessagePublisher;
import io.queuebox.kafka.KafkaSettings;
import io.queuebox.kafka.testing.InProcessKafka;
import io.queuebox.ports.InboxKey;
import io.queuebox.ports.InboxOutcome;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.testkit.fixtures.OutboxFixtures;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Outbox events published by QueueBox's real Kafka publisher to the in-process broker, consumed through the inbox
 * into the real PostgreSQL: each event's business row exists once, whatever is redelivered or crashes.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class InboxKafkaTest {

    private static final Duration PATIENCE = Duration.ofSeconds(60);

    private static InboxTestDatabase database;
    private static String bootstrap;
    private final ExecutorService threads = Executors.newCachedThreadPool();
    private final List<KafkaInboxConsumer<String, String>> consumers = Collections.synchronizedList(new ArrayList<>());
    private String topic;
    private Effects effects;

    @BeforeAll
    static void start() {
        bootstrap = InProcessKafka.bootstrapServers();
        database = InboxTestDatabase.withFreshSchema("inbox_kafka");
    }

    @AfterAll
    static void dropSchema() {
        if (database != null) {
            database.close();
        }
    }

    @BeforeEach
    void freshTopicAndTable() throws Exception {
        String name = "inbox_" + UUID.randomUUID().toString().substring(0, 8);
        topic = "queuebox.inbox." + name;
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all().get(30, TimeUnit.SECONDS);
        }
        effects = database.effects(name);
    }

    @AfterEach
    void stopConsumers() throws Exception {
        for (KafkaInboxConsumer<String, String> consumer : consumers) {
            try {
                consumer.stop();
            } catch (RuntimeException alreadyClosed) {
                // Its loop ended on its own (the missing-header test).
            }
        }
        threads.shutdown();
        assertThat(threads.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
    }

    @Test
    void everyEventIsAppliedOnceInItsAggregatesOrderAndItsOffsetCommittedAfterwards() throws Exception {
        List<OutboxEvent> events = OutboxFixtures.interleavedEvents(4, 5);
        publish(events);

        String group = "g-" + UUID.randomUUID();
        running(consumer(group, "billing", handlerWriting("billing")));

        await().atMost(PATIENCE).until(() -> effects.count() >= events.size());
        assertThat(effects.applied()).containsExactlyInAnyOrderElementsOf(ids(events));
        assertThat(effects.appliedPerAggregate()).isEqualTo(expectedOrder(events));
        await().atMost(PATIENCE).until(() -> committedOffsets(group) == events.size());
    }

    @Test
    void aHandlerCrashingAfterItsBusinessWriteAndBeforeTheCommitLeavesTheEffectOnceAndKeepsTheOrder() throws Exception {
        List<OutboxEvent> events = OutboxFixtures.interleavedEvents(3, 4);
        UUID crashing = events.get(4).eventId();
        publish(events);

        AtomicInteger crashes = new AtomicInteger();
        AtomicInteger failures = new AtomicInteger();
        running(consumer("g-" + UUID.randomUUID(), "billing", (tx, record) -> {
            UUID id = eventId(record);
            effects.apply(tx, id, record.key(), "billing");
            if (id.equals(crashing) && crashes.getAndIncrement() == 0) {
                throw new IllegalStateException("crashed after the business write, before the commit");
            }
        }, new InboxConsumerListener() {
            @Override
            public void failed(String message, InboxKey key, Exception failure) {
                failures.incrementAndGet();
            }
        }));

        await().atMost(PATIENCE).until(() -> effects.count() >= events.size());
        assertThat(crashes.get()).as("the crashing event was tried again").isEqualTo(2);
        assertThat(failures.get()).isEqualTo(1);
        assertThat(effects.applied()).containsExactlyInAnyOrderElementsOf(ids(events));
        assertThat(effects.appliedPerAggregate()).isEqualTo(expectedOrder(events));
    }

    @Test
    void aRedeliveryOfEventsAlreadyCommittedIsAnsweredAsDuplicatesWithoutASecondEffect() throws Exception {
        List<OutboxEvent> events = OutboxFixtures.interleavedEvents(2, 5);
        publish(events);
        running(consumer("g-" + UUID.randomUUID(), "billing", handlerWriting("billing")));
        await().atMost(PATIENCE).until(() -> effects.count() >= events.size());

        // A consumer of another group gets every record again: Kafka's redelivery after offsets were lost or reset.
        Map<UUID, InboxOutcome> outcomes = new ConcurrentHashMap<>();
        running(consumer("g-" + UUID.randomUUID(), "billing", handlerWriting("redelivered"), recording(outcomes)));
        await().atMost(PATIENCE).until(() -> outcomes.size() == events.size());

        assertThat(Set.copyOf(outcomes.values())).containsExactly(InboxOutcome.DUPLICATE);
        assertThat(effects.applied()).containsExactlyInAnyOrderElementsOf(ids(events));
    }

    @Test
    void twoConsumersRacingOnTheSameRedeliveredEventsApplyEachOnce() throws Exception {
        List<OutboxEvent> events = OutboxFixtures.interleavedEvents(6, 10);
        publish(events);

        // Two groups: both receive every record at the same time, as two members do around a rebalance.
        Map<UUID, InboxOutcome> first = new ConcurrentHashMap<>();
        Map<UUID, InboxOutcome> second = new ConcurrentHashMap<>();
        running(consumer("g-" + UUID.randomUUID(), "billing", handlerWriting("first"), recording(first)));
        running(consumer("g-" + UUID.randomUUID(), "billing", handlerWriting("second"), recording(second)));
        await().atMost(PATIENCE).until(() -> first.size() == events.size() && second.size() == events.size());

        assertThat(effects.applied()).containsExactlyInAnyOrderElementsOf(ids(events));
        for (OutboxEvent event : events) {
            assertThat(List.of(first.get(event.eventId()), second.get(event.eventId())))
                    .as("outcomes of %s", event.eventId()).containsExactlyInAnyOrder(InboxOutcome.PROCESSED,
                            InboxOutcome.DUPLICATE);
        }
    }

    @Test
    void aRecordWithoutTheEventIdHeaderStopsTheLoopWithAnErrorNamingTheHeaderAndTheRecord() throws Exception {
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap), new StringSerializer(), new StringSerializer())) {
            producer.send(new ProducerRecord<>(topic, 0, "order-1", "{}")).get(30, TimeUnit.SECONDS);
        }
        KafkaInboxConsumer<String, String> consumer = consumer("g-" + UUID.randomUUID(), "billing",
                handlerWriting("billing"));

        Future<?> loop = threads.submit(consumer::run);

        assertThatThrownBy(() -> loop.get(60, TimeUnit.SECONDS))
                .cause()
                .isInstanceOf(MissingEventIdException.class)
                .hasMessageContaining("no event-id header")
                .hasMessageContaining(topic + "-0@0");
        assertThat(effects.count()).isZero();
    }

    @Test
    void theHeaderReadIsTheOneQueueBoxsKafkaPublisherSets() {
        assertThat(KafkaInboxConsumer.EVENT_ID_HEADER).isEqualTo(KafkaMessagePublisher.HEADER_EVENT_ID);
    }

    @Test
    void autoCommitIsRefusedNamingTheProperty() {
        assertThatThrownBy(() -> KafkaInboxConsumer.builder("billing", database.inbox, database.dataSource,
                new StringDeserializer(), new StringDeserializer()).consumerProperty("enable.auto.commit", "true"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("enable.auto.commit")
                .hasMessageContaining("after the database transaction");
    }

    @Test
    void aConsumerWithoutAGroupIsRefusedNamingTheProperty() {
        assertThatThrownBy(() -> KafkaInboxConsumer.builder("billing", database.inbox, database.dataSource,
                        new StringDeserializer(), new StringDeserializer())
                .consumerProperty("bootstrap.servers", bootstrap)
                .topics(List.of(topic))
                .handler(handlerWriting("billing"))
                .build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("group.id");
    }

    // ------------------------------------------------------------------------------------- helpers

    private void publish(List<OutboxEvent> events) {
        KafkaMessagePublisher publisher = KafkaMessagePublisher.create(KafkaSettings.builder()
                .bootstrapServers(bootstrap).topic(topic).build());
        try {
            List<PublishOutcome> outcomes = publisher.publish(OutboxFixtures.claimedDeliveriesOf(events));
            assertThat(outcomes).allMatch(outcome -> outcome instanceof PublishOutcome.Acked);
        } finally {
            publisher.close();
        }
    }

    private KafkaInboxHandler<String, String> handlerWriting(String handledBy) {
        return (tx, record) -> effects.apply(tx, eventId(record), record.key(), handledBy);
    }

    private static UUID eventId(org.apache.kafka.clients.consumer.ConsumerRecord<String, String> record) {
        return UUID.fromString(new String(record.headers().lastHeader("event-id").value(), StandardCharsets.UTF_8));
    }

    private static InboxConsumerListener recording(Map<UUID, InboxOutcome> outcomes) {
        return new InboxConsumerListener() {
            @Override
            public void handled(String message, InboxKey key, InboxOutcome outcome) {
                outcomes.put(key.eventId(), outcome);
            }
        };
    }

    private KafkaInboxConsumer<String, String> consumer(String group, String name, KafkaInboxHandler<String, String> handler) {
        return consumer(group, name, handler, InboxConsumerListener.NOOP);
    }

    private KafkaInboxConsumer<String, String> consumer(String group, String name,
            KafkaInboxHandler<String, String> handler, InboxConsumerListener listener) {
        KafkaInboxConsumer<String, String> consumer = KafkaInboxConsumer.builder(name, database.inbox,
                        database.dataSource, new StringDeserializer(), new StringDeserializer())
                .consumerProperty("bootstrap.servers", bootstrap)
                .consumerProperty("group.id", group)
                .consumerProperty("auto.offset.reset", "earliest")
                .topics(List.of(topic))
                .handler(handler)
                .retryDelay(Duration.ofMillis(100))
                .pollTimeout(Duration.ofMillis(100))
                .listener(listener)
                .build();
        consumers.add(consumer);
        return consumer;
    }

    private void running(KafkaInboxConsumer<String, String> consumer) {
        threads.submit(consumer::run);
    }

    private long committedOffsets(String group) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            return offsets.values().stream().mapToLong(OffsetAndMetadata::offset).sum();
        }
    }

    private static List<UUID> ids(List<OutboxEvent> events) {
        return events.stream().map(OutboxEvent::eventId).toList();
    }

    private static Map<String, List<UUID>> expectedOrder(List<OutboxEvent> events) {
        Map<String, List<UUID>> order = new java.util.HashMap<>();
        for (OutboxEvent event : events) {
            order.computeIfAbsent(event.aggregateId(), k -> new ArrayList<>()).add(event.eventId());
        }
        return order;
    }
}
