package io.queuebox.archfixture.good.bootstrap;

import io.queuebox.archfixture.good.domain.Rule;
import io.queuebox.archfixture.good.kafka.Publisher;
import io.queuebox.archfixture.good.ports.Port;
import java.time.Clock;
import java.util.ServiceLoader;

public final class Main {
    public static void main(String[] args) {
        String url = System.getenv("QUEUEBOX_DATABASE_URL");
        String mode = System.getProperty("queuebox.mode", "polling");
        // The database adapter is a plug-in: found, never named.
        Port store = ServiceLoader.load(Port.class).findFirst().orElseThrow();
        new Publisher().publish(store);
        System.out.println(url + mode + new Rule(store, Clock.systemUTC()).deadline());
    }
}
