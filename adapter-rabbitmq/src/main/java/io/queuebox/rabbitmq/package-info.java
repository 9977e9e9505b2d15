/**
 * The RabbitMQ broker adapter: {@link io.queuebox.rabbitmq.RabbitMqMessagePublisher}, configured by
 * {@link io.queuebox.rabbitmq.RabbitMqSettings}, found by the bootstrap jar as provider {@code rabbitmq}.
 */
package io.queuebox.rabbitmq;
