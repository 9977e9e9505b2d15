package io.queuebox.inbox;

/**
 * A message the inbox cannot deduplicate: it carries no event id where QueueBox's publishers put it, or one that
 * is not a UUID. The message names the message (topic, partition and offset; queue and delivery tag), the header or
 * property that was looked at, and what was found.
 */
public final class MissingEventIdException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    public MissingEventIdException(String message) {
        super(message);
    }
}
