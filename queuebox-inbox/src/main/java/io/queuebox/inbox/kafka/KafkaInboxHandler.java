package io.queuebox.inbox.kafka;

import java.sql.Connection;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * The consumer's business logic for one record, run inside the inbox's transaction: write through
 * {@code transaction} only (see {@link io.queuebox.ports.InboxHandler}).
 */
@FunctionalInterface
public interface KafkaInboxHandler<K, V> {

    void handle(Connection transaction, ConsumerRecord<K, V> record) throws Exception;
}
