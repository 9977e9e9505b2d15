package io.queuebox.domain;

import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.DeliveryListener;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.WakeReason;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** Writes down what the engine reports, as short lines a test can assert on. */
final class RecordingListener implements DeliveryListener {

    final List<WakeReason> wakes = new CopyOnWriteArrayList<>();
    final List<String> errors = new CopyOnWriteArrayList<>();
    final List<String> parked = new CopyOnWriteArrayList<>();
    final List<String> retries = new CopyOnWriteArrayList<>();
    final List<String> leaseLost = new CopyOnWriteArrayList<>();
    final List<ClaimedDelivery> delivered = new CopyOnWriteArrayList<>();

    @Override
    public void onWake(WakeReason reason) {
        wakes.add(reason);
    }

    @Override
    public void onDelivered(List<ClaimedDelivery> deliveries) {
        delivered.addAll(deliveries);
    }

    @Override
    public void onRetryScheduled(ClaimedDelivery delivery, Duration delay, String reason) {
        retries.add(delivery.eventId() + " " + reason);
    }

    @Override
    public void onParked(ClaimedDelivery delivery, String reason) {
        parked.add(delivery.eventId() + " " + reason);
    }

    @Override
    public void onLeaseLost(LeaseToken lease, int expected, int updated) {
        leaseLost.add(expected + "->" + updated);
    }

    @Override
    public void onError(String step, Throwable error) {
        errors.add(step + ": " + error.getMessage());
    }
}
