package io.queuebox.inbox.kafka;

import io.queuebox.inbox.EventIds;
import io.queuebox.inbox.InboxConsumerListener;
import io.queuebox.inbox.JdbcInbox;
import io.queuebox.inbox.MissingEventIdException;
import io.queuebox.ports.InboxKey;
import io.queuebox.ports.InboxOutcome;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * A Kafka poll loop that hands each record to the inbox: one database transaction per record (the inbox entry and
 * the handler's writes), and the offset committed only after that transaction committed. A crash anywhere in
 * between makes Kafka deliver the record again, and the inbox answers it as a duplicate.
 *
 * <p>Order: records of one partition (so of one aggregate, which QueueBox's publisher uses as the key) are handled
 * one after another in offset order. When a record fails, its partition is rewound to it and paused for
 * {@code retryDelay}; the later records of that partition wait, the other partitions go on. A record keeps being
 * retried until it succeeds: a poison record holds its partition (watch {@link InboxConsumerListener#failed}).
 *
 * <p>A record without the {@value #EVENT_ID_HEADER} header (or with one that is not a UUID) stops the loop: the
 * offsets of the records handled before it are committed and {@link #run()} throws
 * {@link MissingEventIdException} naming the topic, partition and offset. Skipping it would lose it silently.
 *
 * <p>Not thread-safe, like the {@link KafkaConsumer} it owns: call {@link #run()} on one thread and
 * {@link #stop()} from any.
 */
public final class KafkaInboxConsumer<K, V> {

    /** The header QueueBox's Kafka publisher puts the event id in: {@value}. */
    public static final String EVENT_ID_HEADER = "event-id";

    private static final String PUBLISHER = "QueueBox's Kafka publisher";

    private final String consumerName;
    private final JdbcInbox inbox;
    private final DataSource dataSource;
    private final KafkaInboxHandler<K, V> handler;
    private final Duration pollTimeout;
    private final long retryDelayNanos;
    private final InboxConsumerListener listener;
    private final KafkaConsumer<K, V> consumer;
    private final Map<TopicPartition, Long> pausedUntil = new HashMap<>();
    private volatile boolean stopping;

    private KafkaInboxConsumer(Builder<K, V> builder) {
        this.consumerName = builder.consumerName;
        this.inbox = builder.inbox;
        this.dataSource = builder.dataSource;
        this.handler = Objects.requireNonNull(builder.handler, "handler");
        this.pollTimeout = builder.pollTimeout;
        this.retryDelayNanos = builder.retryDelay.toNanos();
        this.listener = builder.listener;
        if (builder.topics.isEmpty()) {
            throw new IllegalArgumentException("topics: name at least one topic to consume");
        }
        this.consumer = new KafkaConsumer<>(builder.properties(), builder.keyDeserializer, builder.valueDeserializer);
        this.consumer.subscribe(builder.topics);
    }

    /**
     * A builder for consumer {@code consumerName} (the inbox key's consumer; use one name per consuming service
     * and keep it), processing into {@code inbox} on connections of {@code dataSource}.
     */
    public static <K, V> Builder<K, V> builder(String consumerName, JdbcInbox inbox, DataSource dataSource,
            Deserializer<K> keyDeserializer, Deserializer<V> valueDeserializer) {
        return new Builder<>(consumerName, inbox, dataSource, keyDeserializer, valueDeserializer);
    }

    /**
     * Polls and processes until {@link #stop()}; closes the Kafka consumer when it returns.
     *
     * @throws MissingEventIdException for a record without a usable event id (after committing what came before)
     */
    public void run() {
        try {
            while (!stopping) {
                pollOnce();
            }
        } catch (WakeupException e) {
            if (!stopping) {
                throw e;
            }
        } finally {
            consumer.close();
        }
    }

    /** Makes {@link #run()} return soon; safe from any thread. */
    public void stop() {
        stopping = true;
        consumer.wakeup();
    }

    private void pollOnce() {
        resumeDuePartitions();
        ConsumerRecords<K, V> records = consumer.poll(pollTimeout);
        Map<TopicPartition, OffsetAndMetadata> handled = new HashMap<>();
        try {
            for (TopicPartition partition : records.partitions()) {
                for (ConsumerRecord<K, V> record : records.records(partition)) {
                    if (stopping || !process(partition, record)) {
                        // The rest of this partition waits for the failed record: order per key.
                        break;
                    }
                    handled.put(partition, new OffsetAndMetadata(record.offset() + 1));
                }
            }
        } finally {
            commit(handled);
        }
    }

    private boolean process(TopicPartition partition, ConsumerRecord<K, V> record) {
        String message = partition + "@" + record.offset();
        UUID eventId = EventIds.parse(eventIdHeader(record), EVENT_ID_HEADER + " header", "record " + message, PUBLISHER);
        InboxKey key = new InboxKey(consumerName, eventId);
        try {
            InboxOutcome outcome = inbox.processInNewTransaction(dataSource, key, tx -> handler.handle(tx, record));
            listener.handled(message, key, outcome);
            return true;
        } catch (Exception e) {
            listener.failed(message, key, e);
            consumer.seek(partition, record.offset());
            consumer.pause(Set.of(partition));
            pausedUntil.put(partition, System.nanoTime() + retryDelayNanos);
            return false;
        }
    }

    private static String eventIdHeader(ConsumerRecord<?, ?> record) {
        Header header = record.headers().lastHeader(EVENT_ID_HEADER);
        return header == null || header.value() == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    private void commit(Map<TopicPartition, OffsetAndMetadata> handled) {
        if (handled.isEmpty()) {
            return;
        }
        try {
            consumer.commitSync(handled);
        } catch (CommitFailedException | RebalanceInProgressException e) {
            // The partitions moved to another member, which starts from the last committed offset: it gets these
            // records again and the inbox answers them as duplicates.
        }
    }

    private void resumeDuePartitions() {
        if (pausedUntil.isEmpty()) {
            return;
        }
        long now = System.nanoTime();
        List<TopicPartition> due = new ArrayList<>();
        for (Iterator<Map.Entry<TopicPartition, Long>> it = pausedUntil.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<TopicPartition, Long> entry = it.next();
            if (now - entry.getValue() >= 0) {
                due.add(entry.getKey());
                it.remove();
            }
        }
        due.retainAll(consumer.assignment());
        if (!due.isEmpty()) {
            consumer.resume(due);
        }
    }

    /**
     * Settings of the loop, each checked when set, naming the setting. {@code consumerProperty} passes Kafka consumer
     * properties through; {@code bootstrap.servers} and {@code group.id} are required, and
     * {@code enable.auto.commit} is always false (auto-commit would commit offsets before the database did).
     */
    public static final class Builder<K, V> {
        private final String consumerName;
        private final JdbcInbox inbox;
        private final DataSource dataSource;
        private final Deserializer<K> keyDeserializer;
        private final Deserializer<V> valueDeserializer;
        private final Map<String, Object> properties = new HashMap<>();
        private List<String> topics = List.of();
        private KafkaInboxHandler<K, V> handler;
        private Duration pollTimeout = Duration.ofMillis(500);
        private Duration retryDelay = Duration.ofSeconds(1);
        private InboxConsumerListener listener = InboxConsumerListener.NOOP;

        private Builder(String consumerName, JdbcInbox inbox, DataSource dataSource, Deserializer<K> keyDeserializer,
                Deserializer<V> valueDeserializer) {
            this.consumerName = InboxKey.requireConsumerName("consumerName", consumerName);
            this.inbox = Objects.requireNonNull(inbox, "inbox");
            this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
            this.keyDeserializer = Objects.requireNonNull(keyDeserializer, "keyDeserializer");
            this.valueDeserializer = Objects.requireNonNull(valueDeserializer, "valueDeserializer");
        }

        /** The topics to subscribe to; at least one. */
        public Builder<K, V> topics(List<String> value) {
            this.topics = List.copyOf(value);
            return this;
        }

        /** Any Kafka consumer property; {@code enable.auto.commit=true} is refused. */
        public Builder<K, V> consumerProperty(String name, Object value) {
            Objects.requireNonNull(name, "consumer property name");
            Objects.requireNonNull(value, name);
            if (name.equals(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG) && !"false".equals(String.valueOf(value))) {
                throw new IllegalArgumentException(name + ": must be false, got: " + value + " (the inbox consumer"
                        + " commits offsets itself, after the database transaction)");
            }
            properties.put(name, value);
            return this;
        }

        /** The business logic; required. */
        public Builder<K, V> handler(KafkaInboxHandler<K, V> value) {
            this.handler = Objects.requireNonNull(value, "handler");
            return this;
        }

        /** The longest one poll waits for records; default 500 ms, at least 1 ms. */
        public Builder<K, V> pollTimeout(Duration value) {
            this.pollTimeout = atLeastOneMilli("pollTimeout", value);
            return this;
        }

        /** How long a partition pauses after a failed record before that record is tried again; default 1 s. */
        public Builder<K, V> retryDelay(Duration value) {
            Objects.requireNonNull(value, "retryDelay");
            if (value.isNegative()) {
                throw new IllegalArgumentException("retryDelay: must not be negative, got: " + value);
            }
            this.retryDelay = value;
            return this;
        }

        /** Told about every record; default {@link InboxConsumerListener#NOOP}. */
        public Builder<K, V> listener(InboxConsumerListener value) {
            this.listener = Objects.requireNonNull(value, "listener");
            return this;
        }

        /** Creates the Kafka consumer and subscribes it; {@link KafkaInboxConsumer#run()} starts polling. */
        public KafkaInboxConsumer<K, V> build() {
            if (handler == null) {
                throw new IllegalStateException("handler: not set");
            }
            return new KafkaInboxConsumer<>(this);
        }

        private Map<String, Object> properties() {
            for (String required : List.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, ConsumerConfig.GROUP_ID_CONFIG)) {
                if (!properties.containsKey(required)) {
                    throw new IllegalStateException(required + ": required (set it with consumerProperty)");
                }
            }
            Map<String, Object> all = new HashMap<>(properties);
            all.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
            return all;
        }

        private static Duration atLeastOneMilli(String key, Duration value) {
            Objects.requireNonNull(value, key);
            if (value.toMillis() < 1) {
                throw new IllegalArgumentException(key + ": must be at least 1 ms, got: " + value);
            }
            return value;
        }
    }
}
