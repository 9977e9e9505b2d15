package io.queuebox.kafka;

import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/** Events, deliveries and a consumer that reads a topic back. */
final class KafkaFixtures {

    private static final AtomicLong SEQUENCE = new AtomicLong();
    private static final LeaseToken LEASE = LeaseToken.random();

    private KafkaFixtures() {
    }

    static String uniqueName(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    static OutboxEvent anEventOf(String aggregateType, String aggregateId, String payload) {
        return OutboxEvent.of(aggregateType, aggregateId, "Changed", payload.getBytes(StandardCharsets.UTF_8));
    }

    static ClaimedDelivery aDeliveryOf(OutboxEvent event) {
        return new ClaimedDelivery(SEQUENCE.incrementAndGet(), event, 0, LEASE, Instant.parse("2026-01-02T03:04:05Z"));
    }

    static List<ClaimedDelivery> deliveriesOf(List<OutboxEvent> events) {
        return events.stream().map(KafkaFixtures::aDeliveryOf).toList();
    }

    static KafkaMessagePublisher publisher(String bootstrap, Map<String, String> more) {
        KafkaSettings.Builder builder = KafkaSettings.builder().bootstrapServers(bootstrap);
        more.forEach(builder::set);
        return KafkaMessagePublisher.create(builder.build());
    }

    /** Creates the topic (3 partitions) and waits until the broker has it. */
    static void createTopic(String bootstrap, String topic) {
        try (Admin admin = Admin.create(Map.<String, Object>of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all().get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("cannot create topic " + topic, e);
        }
    }

    /** Reads the topic from the beginning until {@code expected} records arrived or the time is up. */
    static List<ConsumerRecord<String, byte[]>> readBack(String bootstrap, String topic, int expected,
                                                         Duration within) {
        List<ConsumerRecord<String, byte[]>> records = new ArrayList<>();
        try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false",
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName(),
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName()))) {
            // Assigned, not subscribed: no consumer group to join, so reading back costs milliseconds.
            List<TopicPartition> partitions = consumer.partitionsFor(topic, within).stream()
                    .map(p -> new TopicPartition(p.topic(), p.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            long deadline = System.nanoTime() + within.toNanos();
            while (records.size() < expected && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(100)).forEach(records::add);
            }
            // A short extra poll catches records beyond the expected count (there must be none).
            consumer.poll(Duration.ofMillis(200)).forEach(records::add);
        }
        return records;
    }

    static String header(ConsumerRecord<String, byte[]> record, String name) {
        var header = record.headers().lastHeader(name);
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    static String text(ConsumerRecord<String, byte[]> record) {
        return new String(record.value(), StandardCharsets.UTF_8);
    }

    /** The reason a publish outcome that is not an ack gives; empty for an ack. */
    static String reasonOf(PublishOutcome outcome) {
        if (outcome instanceof PublishOutcome.RetriableFailure r) {
            return r.reason();
        }
        if (outcome instanceof PublishOutcome.NotAttempted n) {
            return n.reason();
        }
        return outcome instanceof PublishOutcome.PermanentFailure p ? p.reason() : "";
    }
}
