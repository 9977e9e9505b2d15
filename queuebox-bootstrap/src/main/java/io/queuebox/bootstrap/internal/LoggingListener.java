package io.queuebox.bootstrap.internal;

import io.queuebox.bootstrap.config.Masking;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.DeliveryListener;
import io.queuebox.ports.LeaseToken;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** What an operator should read in the log: parkings, retries (at debug), lost leases and loop errors. */
final class LoggingListener implements DeliveryListener {

    private static final Logger LOG = LoggerFactory.getLogger("io.queuebox.delivery");

    @Override
    public void onRetryScheduled(ClaimedDelivery delivery, Duration delay, String reason) {
        LOG.debug("event {} of {} retries in {} ms after attempt {}: {}", delivery.eventId(), delivery.aggregate(),
                delay.toMillis(), delivery.attempts() + 1, reason);
    }

    @Override
    public void onParked(ClaimedDelivery delivery, String reason) {
        LOG.warn("event {} of {} parked after {} attempt(s): {}", delivery.eventId(), delivery.aggregate(),
                delivery.attempts() + 1, reason);
    }

    @Override
    public void onLeaseLost(LeaseToken lease, int expected, int updated) {
        LOG.warn("lease {} expired before its outcome was recorded: {} of {} rows were re-claimed by another relay"
                + " and will be delivered again; consider a longer outbox.leaseMs", lease, expected - updated, expected);
    }

    @Override
    public void onError(String step, Throwable error) {
        LOG.warn("delivery step '{}' failed, carrying on: {}", step, Masking.maskUrl(String.valueOf(error)));
    }
}
