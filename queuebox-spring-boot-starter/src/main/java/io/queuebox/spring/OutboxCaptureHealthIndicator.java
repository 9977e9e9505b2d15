package io.queuebox.spring;

import io.queuebox.embed.config.Keys;
import io.queuebox.embed.config.QueueBoxConfig;
import org.springframework.boot.actuate.health.AbstractHealthIndicator;

/**
 * {@code outboxCapture}: advisory, like the jar's {@code outbox-capture}, so never down for the application: a
 * capture problem only slows delivery to polling. The starter runs no capture connector; it says how delivery
 * is woken instead.
 */
class OutboxCaptureHealthIndicator extends AbstractHealthIndicator {

    private final QueueBoxConfig config;

    OutboxCaptureHealthIndicator(QueueBoxConfig config) {
        super("QueueBox capture health check failed");
        this.config = config;
    }

    @Override
    protected void doHealthCheck(org.springframework.boot.actuate.health.Health.Builder builder) {
        builder.up()
                .withDetail("capture", "disabled (capture runs in queuebox.jar)")
                .withDetail("wakeUps", "after each commit of TransactionalOutboxWriter; delivery also polls every "
                        + config.longValue(Keys.OUTBOX_POLL_INTERVAL_MS) + " ms");
    }
}
