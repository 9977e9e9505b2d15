package io.queuebox.ports;

import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * What happened in the delivery engine, for metrics, logs and health, without the engine knowing any
 * of them. Every method has a no-op default; implementations override what they need and must return
 * quickly and never throw (an exception is swallowed by the engine, which must keep delivering).
 */
public interface DeliveryListener {

    /** Does nothing. */
    DeliveryListener NOOP = new DeliveryListener() { };

    /** The engine woke up. */
    default void onWake(WakeReason reason) { }

    /** A claim returned {@code rows} rows (possibly none) and took {@code elapsed}. */
    default void onClaimed(int rows, Duration elapsed) { }

    /** A batch was published and its outcomes are known. */
    default void onPublished(List<PublishOutcome> outcomes, Duration elapsed) { }

    /** Rows were marked sent. */
    default void onDelivered(List<ClaimedDelivery> deliveries) { }

    /** A row failed and goes back with backoff. */
    default void onRetryScheduled(ClaimedDelivery delivery, Duration delay, String reason) { }

    /** A row was parked. */
    default void onParked(ClaimedDelivery delivery, String reason) { }

    /**
     * An update after a claim touched fewer rows than the batch held: the lease expired and the rows were
     * re-claimed by someone else (they will be delivered again by that claimer).
     */
    default void onLeaseLost(LeaseToken lease, int expected, int updated) { }

    /** The engine could not complete a step (store or publisher threw); it carries on. */
    default void onError(String step, Throwable error) { }

    /** Calls this listener, then {@code next}. A throwing listener does not keep {@code next} from running. */
    default DeliveryListener andThen(DeliveryListener next) {
        Objects.requireNonNull(next, "next");
        DeliveryListener first = this;
        return new DeliveryListener() {
            @Override public void onWake(WakeReason reason) { both(() -> first.onWake(reason), () -> next.onWake(reason)); }
            @Override public void onClaimed(int rows, Duration elapsed) { both(() -> first.onClaimed(rows, elapsed), () -> next.onClaimed(rows, elapsed)); }
            @Override public void onPublished(List<PublishOutcome> outcomes, Duration elapsed) { both(() -> first.onPublished(outcomes, elapsed), () -> next.onPublished(outcomes, elapsed)); }
            @Override public void onDelivered(List<ClaimedDelivery> deliveries) { both(() -> first.onDelivered(deliveries), () -> next.onDelivered(deliveries)); }
            @Override public void onRetryScheduled(ClaimedDelivery delivery, Duration delay, String reason) { both(() -> first.onRetryScheduled(delivery, delay, reason), () -> next.onRetryScheduled(delivery, delay, reason)); }
            @Override public void onParked(ClaimedDelivery delivery, String reason) { both(() -> first.onParked(delivery, reason), () -> next.onParked(delivery, reason)); }
            @Override public void onLeaseLost(LeaseToken lease, int expected, int updated) { both(() -> first.onLeaseLost(lease, expected, updated), () -> next.onLeaseLost(lease, expected, updated)); }
            @Override public void onError(String step, Throwable error) { both(() -> first.onError(step, error), () -> next.onError(step, error)); }
        };
    }

    private static void both(Runnable first, Runnable second) {
        try {
            first.run();
        } catch (RuntimeException ignored) {
            // A listener is for observation; its failure must not hide the event from the next one.
        } finally {
            second.run();
        }
    }
}
