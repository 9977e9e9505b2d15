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

    static PublishOutcome notAttempted(UUID eventId, String reason) {
        return new NotAttempted(eventId, reason);
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
     * The message may or may not have reached the broker, and trying again may succeed (a timeout after it
     * was handed to the broker, a connection lost before its confirm, not enough replicas). It counts as an
     * attempt.
     */
    record RetriableFailure(UUID eventId, String reason) implements PublishOutcome {
        public RetriableFailure {
            Objects.requireNonNull(eventId, "eventId");
            Objects.requireNonNull(reason, "reason");
        }
    }

    /**
     * The message was never handed to the broker: no connection or channel, the publisher stopped, the
     * broker was known to be unavailable before the send, or an earlier message of its aggregate failed in
     * the same call. The engine gives the row back unchanged, without counting an attempt or a backoff, so
     * an outage never parks a healthy event. Answer it only when the broker certainly did not receive it.
     */
    record NotAttempted(UUID eventId, String reason) implements PublishOutcome {
        public NotAttempted {
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
