package io.queuebox.archfixture.bad.jdbc;

import io.queuebox.archfixture.bad.kafka.Publisher;

/** Shared adapter support that reaches into an adapter: a back door between adapters. */
public final class SupportUsingPublisher {
    public void publish(Publisher publisher) {
        publisher.publish();
    }
}
