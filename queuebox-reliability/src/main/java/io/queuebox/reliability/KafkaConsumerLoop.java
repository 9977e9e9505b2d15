package io.queuebox.reliability;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Reads the scenario's topic from its start on assigned partitions, with no consumer group: its position
 * lives in this process only, so a broker restart never makes it read a record twice (any copy it sees
 * is one the relay sent twice).
 */
final class KafkaConsumerLoop implements AutoCloseable {

    static final int PARTITIONS = 3;

    final String topic;
    private final Thread thread;
    private volatile boolean stopped;

    /** Creates {@code topic} and reads it. */
    KafkaConsumerLoop(String bootstrap, String topic, Receipts receipts) throws Exception {
        this(bootstrap, createTopic(bootstrap, topic, Map.of()), List.of(topic), receipts);
    }

    /** Reads existing topics. */
    KafkaConsumerLoop(String bootstrap, List<String> topics, Receipts receipts) {
        this(bootstrap, topics.get(0), topics, receipts);
    }

    /** Creates a topic of {@link #PARTITIONS} partitions with these topic settings; answers its name. */
    static String createTopic(String bootstrap, String topic, Map<String, String> settings) throws Exception {
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1).configs(settings))).all().get();
        }
        return topic;
    }

    private KafkaConsumerLoop(String bootstrap, String topic, List<String> topics, Receipts receipts) {
        this.topic = topic;
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false",
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class,
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class));
        List<TopicPartition> partitions = topics.stream().flatMap(name -> java.util.stream.IntStream.range(0, PARTITIONS)
                .mapToObj(p -> new TopicPartition(name, p))).toList();
        consumer.assign(partitions);
        consumer.seekToBeginning(partitions);
        thread = new Thread(() -> {
            try (consumer) {
                while (!stopped) {
                    for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                        receipts.add(UUID.fromString(header(record, "event-id")), header(record, "aggregate-id"), false);
                    }
                }
            }
        }, "kafka-consumer-" + topic);
        thread.setDaemon(true);
        thread.start();
    }

    private static String header(ConsumerRecord<byte[], byte[]> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    @Override
    public void close() throws InterruptedException {
        stopped = true;
        thread.join(10_000);
    }
}
