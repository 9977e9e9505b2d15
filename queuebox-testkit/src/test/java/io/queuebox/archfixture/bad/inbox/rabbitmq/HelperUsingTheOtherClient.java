package io.queuebox.archfixture.bad.inbox.rabbitmq;

import io.queuebox.archfixture.bad.kafka.Publisher;

/** The RabbitMQ helper needing the Kafka client. */
public final class HelperUsingTheOtherClient {
    public void consume() {
        new Publisher().publish();
    }
}
