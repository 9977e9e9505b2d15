package io.queuebox.ports;

import java.time.Instant;
import java.util.Arrays;
import java.util.Objects;

/**
 * A parked row as an operator sees it.
 *
 * @param payloadBytes the length of the whole payload as stored; more than {@code event().payload().length} when
 *                     the payload was read capped ({@link OutboxStore#parked(ReplaySelector, int, int)})
 */
public record ParkedEvent(long sequence, OutboxEvent event, int attempts, String lastError, Instant createdAt,
                          int payloadBytes) {
    public ParkedEvent {
        Objects.requireNonNull(event, "event");
        Objects.requireNonNull(createdAt, "createdAt");
        if (payloadBytes < event.payload().length) {
            throw new IllegalArgumentException("payloadBytes " + payloadBytes + " is less than the payload read ("
                    + event.payload().length + ")");
        }
    }

    /** A row read whole: its payload is all of it. */
    public ParkedEvent(long sequence, OutboxEvent event, int attempts, String lastError, Instant createdAt) {
        this(sequence, event, attempts, lastError, createdAt, event.payload().length);
    }

    /** Checks a cap on the payload bytes to read, as every capped read of parked rows takes it. */
    public static void requirePayloadCap(int maxPayloadBytes) {
        if (maxPayloadBytes < 0) {
            throw new IllegalArgumentException("maxPayloadBytes must be >= 0, got: " + maxPayloadBytes);
        }
    }

    /** Whether the payload read is shorter than the one stored. */
    public boolean payloadCapped() {
        return payloadBytes > event.payload().length;
    }

    /** This row with at most {@code maxPayloadBytes} of its payload; {@link #payloadBytes} keeps the whole length. */
    public ParkedEvent withPayloadCappedAt(int maxPayloadBytes) {
        requirePayloadCap(maxPayloadBytes);
        byte[] payload = event.payload();
        if (payload.length <= maxPayloadBytes) {
            return this;
        }
        OutboxEvent capped = new OutboxEvent(event.eventId(), event.aggregateType(), event.aggregateId(),
                event.eventType(), event.destination(), Arrays.copyOf(payload, maxPayloadBytes), event.contentType(),
                event.headers());
        return new ParkedEvent(sequence, capped, attempts, lastError, createdAt, payloadBytes);
    }
}
