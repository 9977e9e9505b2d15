package io.queuebox.archfixture.good.bootstrap;

import io.queuebox.archfixture.good.domain.Rule;
import io.queuebox.archfixture.good.kafka.Publisher;
import io.queuebox.archfixture.good.postgres.Store;
import java.time.Clock;

public final class Main {
    public static void main(String[] args) {
        String url = System.getenv("QUEUEBOX_DATABASE_URL");
        String mode = System.getProperty("queuebox.mode", "polling");
        Store store = new Store(null);
        new Publisher().publish(store);
        System.out.println(url + mode + new Rule(store, Clock.systemUTC()).deadline());
    }
}
