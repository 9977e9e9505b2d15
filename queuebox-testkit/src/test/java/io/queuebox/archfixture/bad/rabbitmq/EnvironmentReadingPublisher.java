package io.queuebox.archfixture.bad.rabbitmq;

public final class EnvironmentReadingPublisher {
    public String uri() {
        return System.getenv("RABBITMQ_URI") + System.getProperty("rabbitmq.vhost");
    }
}
