package io.queuebox.archfixture.bad.inbox.kafka;

import io.queuebox.archfixture.bad.kafka.Publisher;

/** Uses its own broker's client: allowed. */
public final class Helper {
    public void consume() {
        new Publisher().publish();
    }
}
