/**
 * The Kafka broker adapter: {@link io.queuebox.kafka.KafkaMessagePublisher}, configured by
 * {@link io.queuebox.kafka.KafkaSettings}, found by the bootstrap jar as provider {@code kafka}.
 */
package io.queuebox.kafka;
