package io.queuebox.kafka;

import io.queuebox.ports.PublishOutcome;
import java.util.UUID;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.errors.UnsupportedVersionException;

/** Turns a Kafka failure into an outcome: permanent only when resending the same record cannot help. */
final class KafkaErrors {

    // UnknownTopicOrPartitionException is a RetriableException in Kafka's own hierarchy, so the permanent
    // list is checked first: a producer only sees it once the broker refused to create the topic.
    private static final Class<?>[] PERMANENT = {
            RecordTooLargeException.class,
            RecordBatchTooLargeException.class,
            InvalidTopicException.class,
            UnknownTopicOrPartitionException.class,
            AuthorizationException.class,
            AuthenticationException.class,
            SerializationException.class,
            InvalidRecordException.class,
            UnsupportedVersionException.class,
    };

    private KafkaErrors() {
    }

    static PublishOutcome classify(UUID eventId, Throwable failure) {
        Throwable cause = unwrap(failure);
        String reason = reason(cause);
        for (Class<?> permanent : PERMANENT) {
            if (permanent.isInstance(cause)) {
                return PublishOutcome.permanent(eventId, reason);
            }
        }
        // RetriableException (timeouts, not enough replicas, network, leader changes), a closed producer,
        // anything unknown: in doubt the engine sends again and consumers deduplicate.
        return PublishOutcome.retriable(eventId, reason);
    }

    static boolean isTimeout(Throwable failure) {
        return unwrap(failure) instanceof org.apache.kafka.common.errors.TimeoutException;
    }

    static String reason(Throwable cause) {
        String message = cause.getMessage();
        return message == null || message.isBlank()
                ? cause.getClass().getSimpleName()
                : cause.getClass().getSimpleName() + ": " + message;
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
