package io.queuebox.archfixture.good.inbox.kafka;

import io.queuebox.archfixture.good.kafka.Publisher;

/** Uses its own broker's client. */
public final class Helper {
    public void consume() {
        new Publisher().toString();
    }
}
