package io.queuebox.ports;

import java.util.Objects;
import java.util.UUID;

/** What became of one message handed to a {@link MessagePublisher}. */
public sealed interface PublishOutcome {

    UUID eventId();

    static PublishOutcome acked(UUID eventId) {
        return new Acked(eventId);
    }

    static PublishOutcome retriable(UUID eventId, String reason) {
        return new RetriableFailure(eventId, reason);
    }

    static PublishOutcome permanent(UUID eventId, String reason) {
        return new PermanentFailure(eventId, reason);
    }

    default boolean isAcked() {
        return this instanceof Acked;
    }

    /** The broker confirmed the message durably (under the adapter's configured guarantees). */
    record Acked(UUID eventId) implements PublishOutcome {
        public Acked {
            Objects.requireNonNull(eventId, "eventId");
        }
    }

    /**
     * The message may or may not have reached the broker, and trying again may succeed (timeout, broker
     * down, not enough replicas, not attempted because an earlier message of its aggregate failed).
     */
    record RetriableFailure(UUID eventId, String reason) implements PublishOutcome {
        public RetriableFailure {
            Objects.requireNonNull(eventId, "eventId");
            Objects.requireNonNull(reason, "reason");
        }
    }

    /** Trying the same message again cannot succeed (too large, no such destination, not authorised). */
    record PermanentFailure(UUID eventId, String reason) implements PublishOutcome {
        public PermanentFailure {
            Objects.requireNonNull(eventId, "eventId");
            Objects.requireNonNull(reason, "reason");
        }
    }
}
