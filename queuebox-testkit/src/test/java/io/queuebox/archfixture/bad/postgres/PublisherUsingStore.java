package io.queuebox.archfixture.bad.postgres;

import io.queuebox.archfixture.bad.kafka.Publisher;

public final class PublisherUsingStore {
    public void markSent(Publisher publisher) {
        publisher.publish();
    }
}
