package io.queuebox.ports;

import java.time.Duration;
import java.util.Objects;
import java.util.UUID;

/**
 * Put one claimed row back to pending, due after {@code delay} on the database clock, with its attempt
 * count increased by one and {@code reason} kept as its last error.
 */
public record Reschedule(UUID eventId, Duration delay, String reason) {
    public Reschedule {
        Objects.requireNonNull(eventId, "eventId");
        Objects.requireNonNull(delay, "delay");
        if (delay.isNegative()) {
            throw new IllegalArgumentException("delay must not be negative, got: " + delay);
        }
        Objects.requireNonNull(reason, "reason");
    }
}
