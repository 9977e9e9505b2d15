package io.queuebox.inbox;

import io.queuebox.ports.InboxKey;
import io.queuebox.ports.InboxOutcome;
import java.util.Objects;

/**
 * What the broker consumers did with each message, for logs and metrics, without this module choosing a logging
 * library. Every method has a no-op default; they run on the consumer's thread, so keep them short, and do not
 * throw: an exception here is handled like one of the consumer itself (the Kafka loop retries the record, which the
 * inbox then answers as a duplicate; the RabbitMQ client closes the channel, and this consumer stops consuming).
 * {@code message} describes the message for a person ({@code orders-2@17}, {@code queue billing, delivery tag 5}).
 */
public interface InboxConsumerListener {

    /** Does nothing. */
    InboxConsumerListener NOOP = new InboxConsumerListener() {
    };

    /** The transaction committed: processed now, or a duplicate of an event processed before. Acknowledged next. */
    default void handled(String message, InboxKey key, InboxOutcome outcome) {
    }

    /** The handler or the database failed; the transaction was rolled back and the message goes back or away as configured. */
    default void failed(String message, InboxKey key, Exception failure) {
    }

    /** The message carries no usable event id. */
    default void rejected(String message, MissingEventIdException reason) {
    }

    /** This listener, then {@code next}. */
    default InboxConsumerListener andThen(InboxConsumerListener next) {
        Objects.requireNonNull(next, "next");
        InboxConsumerListener first = this;
        return new InboxConsumerListener() {
            @Override
            public void handled(String message, InboxKey key, InboxOutcome outcome) {
                first.handled(message, key, outcome);
                next.handled(message, key, outcome);
            }

            @Override
            public void failed(String message, InboxKey key, Exception failure) {
                first.failed(message, key, failure);
                next.failed(message, key, failure);
            }

            @Override
            public void rejected(String message, MissingEventIdException reason) {
                first.rejected(message, reason);
                next.rejected(message, reason);
            }
        };
    }
}
