package io.queuebox.archfixture.bad.domain;

import io.queuebox.archfixture.bad.kafka.Publisher;

public final class AdapterUsingRule {
    public void deliver(Publisher publisher) {
        publisher.publish();
    }
}
