package io.queuebox.archfixture.bad.kafka;

import io.queuebox.archfixture.bad.bootstrap.Main;

public final class BootstrapUsingPublisher extends Publisher {
    @Override
    public void publish() {
        Main.settings();
    }
}
