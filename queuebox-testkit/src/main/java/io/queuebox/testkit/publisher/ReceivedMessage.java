package io.queuebox.testkit.publisher;

import io.queuebox.ports.OutboxEvent;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * A message as a consumer read it back from the broker, mapped by the contract subclass from the broker's
 * own record (Kafka record, AMQP delivery).
 *
 * @param eventId       the outbox event id the adapter put on the message (a header or message id)
 * @param key           the message key (Kafka key, AMQP routing key or whatever the adapter uses for the aggregate id)
 * @param eventType     the event type the adapter put on the message
 * @param aggregateType the aggregate type the adapter put on the message
 * @param payload       the body as received
 * @param headers       every header the consumer saw, the application's own ones included
 */
public record ReceivedMessage(UUID eventId, String key, String eventType, String aggregateType, byte[] payload,
                              Map<String, String> headers) {

    public ReceivedMessage {
        Objects.requireNonNull(eventId, "eventId");
        Objects.requireNonNull(payload, "payload");
        headers = Map.copyOf(headers);
    }

    /** The message a broker holds for {@code event} when it keeps everything as written (fakes use this). */
    public static ReceivedMessage asPublished(OutboxEvent event) {
        return new ReceivedMessage(event.eventId(), event.aggregateId(), event.eventType(), event.aggregateType(),
                event.payload(), event.headers());
    }

    /** The payload as UTF-8 text, for readable assertions. */
    public String payloadText() {
        return new String(payload, StandardCharsets.UTF_8);
    }

    // Arrays compare by identity in a record's generated methods; messages compare by content.
    @Override
    public boolean equals(Object other) {
        return other instanceof ReceivedMessage that
                && eventId.equals(that.eventId)
                && Objects.equals(key, that.key)
                && Objects.equals(eventType, that.eventType)
                && Objects.equals(aggregateType, that.aggregateType)
                && Arrays.equals(payload, that.payload)
                && headers.equals(that.headers);
    }

    @Override
    public int hashCode() {
        return eventId.hashCode();
    }

    @Override
    public String toString() {
        return "ReceivedMessage[" + eventId + " " + eventType + " key=" + key + ", " + payloadText() + "]";
    }
}
