package io.queuebox.ports;

import java.util.Objects;
import java.util.UUID;

/**
 * Park one claimed row: it is no longer delivered until an operator replays it. Its attempt count is
 * increased by one and {@code reason} is kept as its last error.
 */
public record Park(UUID eventId, String reason) {
    public Park {
        Objects.requireNonNull(eventId, "eventId");
        Objects.requireNonNull(reason, "reason");
    }
}
