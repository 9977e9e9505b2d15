package io.queuebox.inbox;

import java.util.UUID;

/** Reads the event id the broker consumers find on a message; shared so both name what is missing the same way. */
public final class EventIds {

    private EventIds() {
    }

    /**
     * {@code value} as a UUID, else a {@link MissingEventIdException} naming {@code message}, the {@code field}
     * (header or property) and what it held; {@code publisher} says who sets it, for the reader of the error.
     */
    public static UUID parse(String value, String field, String message, String publisher) {
        if (value == null || value.isBlank()) {
            throw new MissingEventIdException(message + ": no " + field + " (" + publisher + " sets it to the event"
                    + " id, and the inbox deduplicates on it; a message from another producer needs one too)");
        }
        try {
            return UUID.fromString(value.trim());
        } catch (IllegalArgumentException e) {
            throw new MissingEventIdException(message + ": " + field + " '" + value + "' is not a UUID (" + publisher
                    + " sets it to the event id)");
        }
    }
}
