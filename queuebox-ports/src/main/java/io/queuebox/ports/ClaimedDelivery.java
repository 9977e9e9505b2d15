package io.queuebox.ports;

import java.time.Instant;
import java.util.Objects;
import java.util.UUID;

/**
 * One outbox row claimed for delivery.
 *
 * @param sequence  the row's position in write order (an identity column); orders events of one aggregate
 * @param event     the event as the application wrote it
 * @param attempts  how many delivery attempts failed before this one (0 on the first attempt)
 * @param lease     the fencing token of the claim that produced this delivery
 * @param createdAt when the row was written, on the database clock
 */
public record ClaimedDelivery(long sequence, OutboxEvent event, int attempts, LeaseToken lease, Instant createdAt) {
    public ClaimedDelivery {
        Objects.requireNonNull(event, "event");
        Objects.requireNonNull(lease, "lease");
        Objects.requireNonNull(createdAt, "createdAt");
        if (attempts < 0) {
            throw new IllegalArgumentException("attempts must be >= 0, got: " + attempts);
        }
    }

    public UUID eventId() {
        return event.eventId();
    }

    public AggregateRef aggregate() {
        return event.aggregate();
    }
}
