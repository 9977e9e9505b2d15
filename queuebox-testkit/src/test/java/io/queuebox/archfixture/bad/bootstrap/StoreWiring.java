package io.queuebox.archfixture.bad.bootstrap;

import io.queuebox.archfixture.bad.postgres.PublisherUsingStore;

/** Names a database adapter's class instead of finding the database through its provider. */
public final class StoreWiring {
    public static Object store() {
        return PublisherUsingStore.class;
    }
}
