package io.queuebox.ports;

import java.time.Instant;
import java.util.Objects;

/** A parked row as an operator sees it. */
public record ParkedEvent(long sequence, OutboxEvent event, int attempts, String lastError, Instant createdAt) {
    public ParkedEvent {
        Objects.requireNonNull(event, "event");
        Objects.requireNonNull(createdAt, "createdAt");
    }
}
