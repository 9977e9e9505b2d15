package io.queuebox.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.kafka.KafkaErrors.Kind;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.stream.Stream;
import org.apache.kafka.clients.producer.BufferExhaustedException;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.DisconnectException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.LeaderNotAvailableException;
import org.apache.kafka.common.errors.NetworkException;
import org.apache.kafka.common.errors.NotEnoughReplicasAfterAppendException;
import org.apache.kafka.common.errors.NotEnoughReplicasException;
import org.apache.kafka.common.errors.NotLeaderOrFollowerException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

class KafkaErrorsTest {

    static Stream<Exception> retriable() {
        return Stream.of(new NotEnoughReplicasException("isr 1 < 2"), new NotEnoughReplicasAfterAppendException("late"),
                new NetworkException("broker gone"), new DisconnectException("disconnected"),
                new NotLeaderOrFollowerException("moved"), new KafkaException("something unexpected"),
                new IllegalStateException("producer closed"),
                new TimeoutException("Topic t not present in metadata after 5000 ms.",
                        new LeaderNotAvailableException("being created")));
    }

    static Stream<Exception> permanent() {
        return Stream.of(new RecordTooLargeException("too big"), new InvalidTopicException("bad name"),
                new SerializationException("cannot serialize"));
    }

    @ParameterizedTest
    @MethodSource("retriable")
    void transientFailuresAreRetriable(Exception failure) {
        assertThat(KafkaErrors.kindOf(failure)).isEqualTo(Kind.RETRIABLE);
    }

    @ParameterizedTest
    @MethodSource("permanent")
    void failuresThatResendingCannotFixArePermanentAlsoInsideAnExecutionException(Exception failure) {
        assertThat(KafkaErrors.kindOf(failure)).isEqualTo(Kind.PERMANENT);
        assertThat(KafkaErrors.kindOf(new ExecutionException(failure))).isEqualTo(Kind.PERMANENT);
    }

    @Test
    void aMissingTopicIsToldApartFromAClusterThatDoesNotAnswer() {
        // What the producer reports for a topic that does not exist (auto-creation off): measured on Kafka 4.3.
        TimeoutException missing = new TimeoutException("Topic t not present in metadata after 5000 ms.",
                new UnknownTopicOrPartitionException("This server does not host this topic-partition."));
        // What it reports for a cluster that cannot be reached: the same message, no cause.
        TimeoutException unreachable = new TimeoutException("Topic t not present in metadata after 5000 ms.");

        assertThat(KafkaErrors.kindOf(missing)).isEqualTo(Kind.MISSING_TOPIC);
        assertThat(KafkaErrors.kindOf(new ExecutionException(new TimeoutException(missing.getMessage(), missing))))
                .as("the future of send() wraps it twice").isEqualTo(Kind.MISSING_TOPIC);
        assertThat(KafkaErrors.kindOf(new UnknownTopicOrPartitionException("gone"))).isEqualTo(Kind.MISSING_TOPIC);
        assertThat(KafkaErrors.kindOf(unreachable)).isEqualTo(Kind.UNAVAILABLE);
        assertThat(KafkaErrors.kindOf(new CompletionException(unreachable))).isEqualTo(Kind.UNAVAILABLE);
        assertThat(KafkaErrors.kindOf(new TimeoutException("Expiring 1 record(s) for t-0: 15001 ms has passed")))
                .isEqualTo(Kind.UNAVAILABLE);
        assertThat(KafkaErrors.kindOf(new BufferExhaustedException("Failed to allocate 100 bytes within 5000 ms")))
                .isEqualTo(Kind.UNAVAILABLE);
    }

    @Test
    void refusedCredentialsAreAnOutageOfTheRelayNotPoison() {
        assertThat(KafkaErrors.kindOf(new TopicAuthorizationException("Not authorized to access topics: [t]")))
                .isEqualTo(Kind.TOPIC_NOT_AUTHORIZED);
        assertThat(KafkaErrors.kindOf(new ClusterAuthorizationException("denied"))).isEqualTo(Kind.NOT_AUTHORIZED);
        assertThat(KafkaErrors.kindOf(new ExecutionException(new SaslAuthenticationException("bad login"))))
                .isEqualTo(Kind.NOT_AUTHORIZED);
    }

    @Test
    void theReasonNamesTheFailureNotItsWrapper() {
        assertThat(KafkaErrors.reason(new ExecutionException(new RecordTooLargeException("too big"))))
                .isEqualTo("RecordTooLargeException: too big");
        assertThat(KafkaErrors.reason(new NetworkException())).isEqualTo("NetworkException");
        assertThat(KafkaErrors.reason(new ExecutionException(new TimeoutException("Topic t not present in metadata",
                new TimeoutException("Topic t not present in metadata", new UnknownTopicOrPartitionException("not here"))))))
                .isEqualTo("TimeoutException: Topic t not present in metadata (UnknownTopicOrPartitionException: not here)");
    }
}
