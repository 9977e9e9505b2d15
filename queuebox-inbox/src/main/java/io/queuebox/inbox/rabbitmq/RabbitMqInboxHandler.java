package io.queuebox.inbox.rabbitmq;

import com.rabbitmq.client.Delivery;
import java.sql.Connection;

/**
 * The consumer's business logic for one message, run inside the inbox's transaction: write through
 * {@code transaction} only (see {@link io.queuebox.ports.InboxHandler}).
 */
@FunctionalInterface
public interface RabbitMqInboxHandler {

    void handle(Connection transaction, Delivery delivery) throws Exception;
}
