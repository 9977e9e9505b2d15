package io.queuebox.domain;

import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.DeliveryListener;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.ports.WakeReason;
import java.time.Duration;
import java.util.List;

/** A listener that swallows whatever the wrapped one throws: observation must never stop delivery. */
final class SafeListener implements DeliveryListener {

    private final DeliveryListener delegate;

    SafeListener(DeliveryListener delegate) {
        this.delegate = delegate;
    }

    @Override
    public void onWake(WakeReason reason) {
        run(() -> delegate.onWake(reason));
    }

    @Override
    public void onClaimed(int rows, Duration elapsed) {
        run(() -> delegate.onClaimed(rows, elapsed));
    }

    @Override
    public void onPublished(List<PublishOutcome> outcomes, Duration elapsed) {
        run(() -> delegate.onPublished(outcomes, elapsed));
    }

    @Override
    public void onDelivered(List<ClaimedDelivery> deliveries) {
        run(() -> delegate.onDelivered(deliveries));
    }

    @Override
    public void onRetryScheduled(ClaimedDelivery delivery, Duration delay, String reason) {
        run(() -> delegate.onRetryScheduled(delivery, delay, reason));
    }

    @Override
    public void onParked(ClaimedDelivery delivery, String reason) {
        run(() -> delegate.onParked(delivery, reason));
    }

    @Override
    public void onLeaseLost(LeaseToken lease, int expected, int updated) {
        run(() -> delegate.onLeaseLost(lease, expected, updated));
    }

    @Override
    public void onError(String step, Throwable error) {
        run(() -> delegate.onError(step, error));
    }

    private static void run(Runnable call) {
        try {
            call.run();
        } catch (Throwable ignored) {
            // The listener contract says never throw; if one does, even with an Error (a metrics library
            // missing a class), delivery carries on regardless: a listener is for observation only.
        }
    }
}
