package io.queuebox.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.PublishOutcome;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.stream.Stream;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.DisconnectException;
import org.apache.kafka.common.errors.InvalidTopicException;
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
import org.apache.kafka.common.KafkaException;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

class KafkaErrorsTest {

    private static final UUID EVENT = UUID.randomUUID();

    static Stream<Exception> retriable() {
        return Stream.of(new TimeoutException("Expiring 1 record(s)"), new NotEnoughReplicasException("isr 1 < 2"),
                new NotEnoughReplicasAfterAppendException("late"), new NetworkException("broker gone"),
                new DisconnectException("disconnected"), new NotLeaderOrFollowerException("moved"),
                new KafkaException("something unexpected"), new IllegalStateException("producer closed"));
    }

    static Stream<Exception> permanent() {
        return Stream.of(new RecordTooLargeException("too big"), new InvalidTopicException("bad name"),
                new UnknownTopicOrPartitionException("no topic"), new TopicAuthorizationException("denied"),
                new ClusterAuthorizationException("denied"), new SaslAuthenticationException("bad login"),
                new SerializationException("cannot serialize"));
    }

    @ParameterizedTest
    @MethodSource("retriable")
    void transientFailuresAreRetriableAndNameTheException(Exception failure) {
        PublishOutcome outcome = KafkaErrors.classify(EVENT, failure);

        assertThat(outcome).isInstanceOfSatisfying(PublishOutcome.RetriableFailure.class, retriable -> assertThat(
                retriable.reason()).startsWith(failure.getClass().getSimpleName()).contains(failure.getMessage()));
        assertThat(outcome.eventId()).isEqualTo(EVENT);
    }

    @ParameterizedTest
    @MethodSource("permanent")
    void failuresThatResendingCannotFixArePermanentAndNameTheException(Exception failure) {
        assertThat(KafkaErrors.classify(EVENT, failure)).isInstanceOfSatisfying(PublishOutcome.PermanentFailure.class,
                permanent -> assertThat(permanent.reason()).startsWith(failure.getClass().getSimpleName()));
    }

    @ParameterizedTest
    @MethodSource("permanent")
    void theCauseOfAnExecutionExceptionIsClassified(Exception failure) {
        assertThat(KafkaErrors.classify(EVENT, new ExecutionException(failure)))
                .isInstanceOf(PublishOutcome.PermanentFailure.class);
    }
}
