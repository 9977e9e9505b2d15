package io.queuebox.spring;

import io.queuebox.ports.Health;
import org.springframework.boot.actuate.health.AbstractHealthIndicator;

/**
 * {@code outbox}: up while the relay runs with all its threads and the broker answers; down otherwise, with the
 * reason. Like the jar's {@code delivery} and {@code broker} components of {@code /health/ready}.
 */
class OutboxHealthIndicator extends AbstractHealthIndicator {

    private final QueueBoxRelay relay;

    OutboxHealthIndicator(QueueBoxRelay relay) {
        super("QueueBox outbox health check failed");
        this.relay = relay;
    }

    @Override
    protected void doHealthCheck(org.springframework.boot.actuate.health.Health.Builder builder) {
        Health health = relay.health();
        (health.isUp() ? builder.up() : builder.down()).withDetail("detail", health.detail()).withDetails(health.details());
    }
}
