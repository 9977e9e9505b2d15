package io.queuebox.archfixture.bad.inbox;

import io.queuebox.archfixture.bad.kafka.Publisher;

/** The inbox's core reaching for a broker client that an application may not have. */
public final class CoreUsingABrokerClient {
    public void consume() {
        new Publisher().publish();
    }
}
