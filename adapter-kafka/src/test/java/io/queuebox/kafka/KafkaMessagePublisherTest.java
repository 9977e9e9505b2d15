package io.queuebox.kafka;

import io.queuebox.kafka.testing.InProcessKafka;
import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.testkit.fixtures.OutboxFixtures;
import io.queuebox.testkit.publisher.MessagePublisherContract;
import io.queuebox.testkit.publisher.ReceivedMessage;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The testkit's publisher contract against a real Kafka broker: one of its own, without automatic topic
 * creation, so that a topic nobody created stays missing as it does in most production clusters.
 */
class KafkaMessagePublisherTest extends MessagePublisherContract {

    private static final Duration PUBLISH_TIMEOUT = Duration.ofSeconds(3);

    private static InProcessKafka kafka;
    private static String bootstrap;
    private String topic;

    @BeforeAll
    static void startABrokerThatCreatesNoTopic() {
        kafka = InProcessKafka.startDedicated(Map.of("auto.create.topics.enable", "false"));
        bootstrap = kafka.bootstrap();
    }

    @AfterAll
    static void stopTheBroker() {
        kafka.close();
    }

    @Override
    protected MessagePublisher newPublisher() {
        topic = KafkaFixtures.uniqueName("contract");
        KafkaFixtures.createTopic(bootstrap, topic);
        return KafkaMessagePublisher.create(KafkaSettings.builder().bootstrapServers(bootstrap).topic(topic).build());
    }

    @Override
    protected Duration publishTimeout() {
        return PUBLISH_TIMEOUT;
    }

    @Override
    protected OutboxEvent missingDestinationOf(OutboxEvent event) {
        return event.withDestination(topic + ".missing");
    }

    @Override
    protected MessagePublisher newPublisherForUnreachableBroker() {
        int closedPort;
        try (ServerSocket socket = new ServerSocket(0)) {
            closedPort = socket.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        // max.block.ms stays at its default (5 s), longer than the publish timeout: the bound is the call's.
        return KafkaMessagePublisher.create(KafkaSettings.builder().bootstrapServers("127.0.0.1:" + closedPort)
                .publishTimeoutMs(PUBLISH_TIMEOUT.toMillis()).build());
    }

    @Override
    protected List<ReceivedMessage> awaitReceived(int count, Duration timeout) {
        List<ReceivedMessage> received = new ArrayList<>();
        try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false",
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName(),
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName()))) {
            // Assigned, not subscribed: no group to join, so reading back costs milliseconds.
            List<TopicPartition> partitions = consumer.partitionsFor(topic, timeout).stream()
                    .map(p -> new TopicPartition(p.topic(), p.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            long deadline = System.nanoTime() + timeout.toNanos();
            while (received.size() < count && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(100)).forEach(record -> received.add(toReceived(record)));
            }
            consumer.poll(Duration.ofMillis(200)).forEach(record -> received.add(toReceived(record)));
        }
        return received;
    }

    @Override
    protected OutboxEvent poisonOf(OutboxEvent event) {
        // Beyond the producer's max.request.size (1 MiB by default): RecordTooLargeException.
        return OutboxFixtures.withPayloadOfSize(event, 2 * 1024 * 1024);
    }

    private static ReceivedMessage toReceived(ConsumerRecord<String, byte[]> record) {
        Map<String, String> headers = new HashMap<>();
        for (Header header : record.headers()) {
            headers.put(header.key(), new String(header.value(), StandardCharsets.UTF_8));
        }
        return new ReceivedMessage(UUID.fromString(headers.get(KafkaMessagePublisher.HEADER_EVENT_ID)), record.key(),
                headers.get(KafkaMessagePublisher.HEADER_EVENT_TYPE),
                headers.get(KafkaMessagePublisher.HEADER_AGGREGATE_TYPE), record.value(), headers);
    }
}
