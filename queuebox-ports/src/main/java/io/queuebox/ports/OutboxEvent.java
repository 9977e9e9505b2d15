package io.queuebox.ports;

import java.util.Arrays;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;

/**
 * An event as the application writes it into the outbox, inside its own transaction.
 *
 * @param eventId       unique id; consumers deduplicate on it (at-least-once delivery)
 * @param aggregateType the kind of aggregate, for example {@code order}; used for routing
 * @param aggregateId   the aggregate instance; becomes the message key, and events of one aggregate are
 *                      delivered in the order they were written
 * @param eventType     the event's name, for example {@code OrderPlaced}
 * @param destination   an explicit topic or exchange for this event, or {@code null} for the configured routing
 * @param payload       the message body; never {@code null} (use an empty array for an empty body)
 * @param contentType   the payload's media type, for example {@code application/json}
 * @param headers       headers passed through to the broker (for example {@code traceparent}); never {@code null}
 */
public record OutboxEvent(
        UUID eventId,
        String aggregateType,
        String aggregateId,
        String eventType,
        String destination,
        byte[] payload,
        String contentType,
        Map<String, String> headers) {

    /** The content type assumed when the application names none. */
    public static final String DEFAULT_CONTENT_TYPE = "application/json";

    public OutboxEvent {
        Objects.requireNonNull(eventId, "eventId");
        requireText(aggregateType, "aggregateType");
        requireText(aggregateId, "aggregateId");
        requireText(eventType, "eventType");
        if (destination != null && destination.isBlank()) {
            throw new IllegalArgumentException("destination must be null or non-blank");
        }
        Objects.requireNonNull(payload, "payload must not be null (use an empty array for an empty body)");
        contentType = contentType == null || contentType.isBlank() ? DEFAULT_CONTENT_TYPE : contentType;
        Objects.requireNonNull(headers, "headers");
        for (Map.Entry<String, String> header : headers.entrySet()) {
            if (header.getKey() == null || header.getKey().isBlank()) {
                throw new IllegalArgumentException("header names must be non-blank, got: " + headers.keySet());
            }
            if (header.getValue() == null) {
                throw new IllegalArgumentException("header '" + header.getKey() + "' has a null value");
            }
        }
        headers = Map.copyOf(headers);
    }

    /** A new event with a random id, JSON content type, no destination override and no headers. */
    public static OutboxEvent of(String aggregateType, String aggregateId, String eventType, byte[] payload) {
        return new OutboxEvent(UUID.randomUUID(), aggregateType, aggregateId, eventType, null, payload,
                DEFAULT_CONTENT_TYPE, Map.of());
    }

    /** This event with the given headers instead of its own. */
    public OutboxEvent withHeaders(Map<String, String> newHeaders) {
        return new OutboxEvent(eventId, aggregateType, aggregateId, eventType, destination, payload, contentType,
                newHeaders);
    }

    /** This event sent to an explicit destination (topic or exchange) instead of the configured routing. */
    public OutboxEvent withDestination(String newDestination) {
        return new OutboxEvent(eventId, aggregateType, aggregateId, eventType, newDestination, payload, contentType,
                headers);
    }

    /** This event with another content type. */
    public OutboxEvent withContentType(String newContentType) {
        return new OutboxEvent(eventId, aggregateType, aggregateId, eventType, destination, payload, newContentType,
                headers);
    }

    /** The destination override, if the application set one. */
    public Optional<String> destinationOverride() {
        return Optional.ofNullable(destination);
    }

    /** The aggregate this event belongs to. */
    public AggregateRef aggregate() {
        return new AggregateRef(aggregateType, aggregateId);
    }

    // Arrays compare by identity in a record's generated methods; events compare by content.
    @Override
    public boolean equals(Object other) {
        return other instanceof OutboxEvent that
                && eventId.equals(that.eventId)
                && aggregateType.equals(that.aggregateType)
                && aggregateId.equals(that.aggregateId)
                && eventType.equals(that.eventType)
                && Objects.equals(destination, that.destination)
                && Arrays.equals(payload, that.payload)
                && contentType.equals(that.contentType)
                && headers.equals(that.headers);
    }

    @Override
    public int hashCode() {
        return eventId.hashCode();
    }

    @Override
    public String toString() {
        return "OutboxEvent[" + eventId + " " + eventType + " of " + aggregateType + "/" + aggregateId
                + ", " + payload.length + " bytes " + contentType + "]";
    }

    private static void requireText(String value, String name) {
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException(name + " must be non-blank, got: " + value);
        }
    }
}
