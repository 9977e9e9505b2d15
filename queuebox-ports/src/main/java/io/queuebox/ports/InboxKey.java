package io.queuebox.ports;

import java.util.Objects;
import java.util.UUID;

/**
 * What the inbox records: which consumer processed which event. One event is processed once per consumer, so
 * two consumers (say {@code billing} and {@code shipping}) sharing one inbox table each process it once.
 *
 * @param consumer the consumer's stable name: 1 to {@value #MAX_CONSUMER_LENGTH} characters, no control
 *                 characters; renaming a consumer makes it process redelivered events again
 * @param eventId  the event id QueueBox's publishers put on every message
 */
public record InboxKey(String consumer, UUID eventId) {

    /** The longest consumer name: {@value} characters (the SQL inboxes store it in a column of that size). */
    public static final int MAX_CONSUMER_LENGTH = 200;

    public InboxKey {
        consumer = requireConsumerName("consumer", consumer);
        Objects.requireNonNull(eventId, "eventId");
    }

    /**
     * {@code name} if it is a valid consumer name, else an {@link IllegalArgumentException} naming {@code key}
     * (the setting or argument it came from) and the value.
     */
    public static String requireConsumerName(String key, String name) {
        Objects.requireNonNull(name, key);
        if (name.isBlank() || name.length() > MAX_CONSUMER_LENGTH || name.chars().anyMatch(Character::isISOControl)) {
            throw new IllegalArgumentException(key + ": '" + name + "' is not a valid consumer name: use 1-"
                    + MAX_CONSUMER_LENGTH + " characters, not blank, without control characters");
        }
        return name;
    }
}
