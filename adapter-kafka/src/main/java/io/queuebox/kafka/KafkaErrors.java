package io.queuebox.kafka;

import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.errors.UnsupportedVersionException;

/** What a Kafka failure means for QueueBox: whose problem it is, and whether sending the same record again can help. */
final class KafkaErrors {

    /** The kinds of failure the publisher answers differently. */
    enum Kind {
        /** Sending the same record again cannot succeed (too large, illegal topic name): the row is parked. */
        PERMANENT,
        /**
         * The topic does not exist. Kafka calls it retriable, and a topic may appear a moment after its first
         * event (created by a deployment, propagating to every broker): charged with backoff, never parked on the
         * first try, and it holds back only the records to that topic.
         */
        MISSING_TOPIC,
        /** The relay may not write to this topic: an outage of the relay for that topic, not poison. */
        TOPIC_NOT_AUTHORIZED,
        /** The relay cannot log in, or may not produce at all: an outage of the relay, not poison. */
        NOT_AUTHORIZED,
        /** Kafka did not answer in time (no metadata, a record expired): the cluster looks down. */
        UNAVAILABLE,
        /** Anything else, including what is unknown: in doubt the engine sends again and consumers deduplicate. */
        RETRIABLE
    }

    private static final Class<?>[] PERMANENT = {
            RecordTooLargeException.class,
            RecordBatchTooLargeException.class,
            InvalidTopicException.class,
            SerializationException.class,
            InvalidRecordException.class,
            UnsupportedVersionException.class,
    };

    private KafkaErrors() {
    }

    static Kind kindOf(Throwable failure) {
        Throwable cause = unwrap(failure);
        if (hasCause(cause, UnknownTopicOrPartitionException.class)) {
            // Usually a TimeoutException "Topic X not present in metadata" caused by it: the broker answered,
            // the topic is not there.
            return Kind.MISSING_TOPIC;
        }
        if (cause instanceof TopicAuthorizationException) {
            return Kind.TOPIC_NOT_AUTHORIZED;
        }
        if (cause instanceof AuthorizationException || cause instanceof AuthenticationException) {
            return Kind.NOT_AUTHORIZED;
        }
        for (Class<?> permanent : PERMANENT) {
            if (permanent.isInstance(cause)) {
                return Kind.PERMANENT;
            }
        }
        if (cause instanceof TimeoutException && cause.getCause() == null) {
            // Without a cause nobody answered: no metadata at all, a record expired, no buffer freed up.
            return Kind.UNAVAILABLE;
        }
        return Kind.RETRIABLE;
    }

    /**
     * The exception's simple name and message, of the failure itself rather than of its wrapper, and of its root
     * cause when it has one (a metadata timeout says which topic, its cause why).
     */
    static String reason(Throwable failure) {
        Throwable cause = unwrap(failure);
        Throwable root = cause;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return root == cause ? describe(cause) : describe(cause) + " (" + describe(root) + ")";
    }

    private static String describe(Throwable failure) {
        String message = failure.getMessage();
        return message == null || message.isBlank()
                ? failure.getClass().getSimpleName()
                : failure.getClass().getSimpleName() + ": " + message;
    }

    private static boolean hasCause(Throwable failure, Class<? extends Throwable> type) {
        for (Throwable current = failure; current != null; current = current.getCause()) {
            if (type.isInstance(current)) {
                return true;
            }
            if (current.getCause() == current) {
                return false;
            }
        }
        return false;
    }

    private static Throwable unwrap(Throwable failure) {
        Throwable current = failure;
        while ((current instanceof ExecutionException || current instanceof CompletionException)
                && current.getCause() != null) {
            current = current.getCause();
        }
        return current;
    }
}
