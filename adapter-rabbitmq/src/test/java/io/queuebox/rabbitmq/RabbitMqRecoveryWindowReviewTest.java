package io.queuebox.rabbitmq;

import static io.queuebox.testkit.fixtures.OutboxFixtures.claimedDeliveriesOf;
import static io.queuebox.testkit.fixtures.OutboxFixtures.interleavedEvents;
import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.Recoverable;
import com.rabbitmq.client.RecoveryListener;
import com.rabbitmq.client.impl.recovery.AutorecoveringChannel;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.testkit.publisher.ReceivedMessage;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * amqp-client recovers a channel by putting its new incarnation in place (AutorecoveringChannel.delegate) and only
 * then calling confirm.select on it (recoverState). A call that takes that channel from the pool in between (it waited
 * for the only place, which a call that finished just then gave back: isOpen() reads the new, open incarnation) pins
 * an incarnation that is not in confirm mode: getNextPublishSeqNo() is 0 for every publish, the broker confirms none of
 * them, and every entry of the call's unconfirmed map lands on key 0. The messages are at the broker, yet all but the
 * last are answered NotAttempted; the one left on key 0 is settled by the first multiple ack of anything published
 * after the select. The client calls the channel's recovery listeners exactly inside that window: the test holds the
 * window open there (in production it is the few microseconds between the delegate swap and confirmSelect).
 */
class RabbitMqRecoveryWindowReviewTest {

    private final RabbitMqTestBroker broker = new RabbitMqTestBroker("#");

    @AfterEach
    void removeTheTopology() {
        broker.close();
    }

    @Test
    void aChannelTakenBetweenItsRecoveryAndItsConfirmSelectAnswersNothingNotAttemptedThatItWrote() throws Exception {
        try (RabbitMqMessagePublisher publisher = RabbitMqMessagePublisher.create(broker.settings()
                .set("confirm.timeout.ms", "4000").set("channels", "1").set("recovery.interval.ms", "100").build())) {
            assertThat(publisher.publish(claimedDeliveriesOf(interleavedEvents(2, 1)))).allMatch(PublishOutcome::isAcked);
            int warmUp = 2;
            ChannelPool pool = (ChannelPool) field(RabbitMqMessagePublisher.class, "channels").get(publisher);
            Connection connection = PublisherInternals.connection(publisher);
            // The only place, taken as a call takes it: the idle channel of the warm-up.
            Channel only = pool.borrow(connection, System.nanoTime() + TimeUnit.SECONDS.toNanos(1));
            assertThat(only).isInstanceOf(AutorecoveringChannel.class);

            List<ClaimedDelivery> batch = claimedDeliveriesOf(interleavedEvents(50, 1));
            AtomicReference<List<PublishOutcome>> result = new AtomicReference<>();
            Thread caller = new Thread(() -> result.set(publisher.publish(batch)), "test-call");
            caller.setDaemon(true);
            caller.start(); // connection open: it goes on to wait for the only place
            Thread.sleep(300);
            assertThat(caller.getState()).isEqualTo(Thread.State.TIMED_WAITING);

            ((AutorecoveringChannel) only).addRecoveryListener(new RecoveryListener() {
                @Override
                public void handleRecoveryStarted(Recoverable recoverable) {
                    // New incarnation in place, confirm.select not yet sent: the holder gives the channel back now.
                    pool.release(only, true);
                    broker.awaitDeliveries(warmUp + batch.size(), Duration.ofSeconds(2));
                }

                @Override
                public void handleRecovery(Recoverable recoverable) {
                }
            });
            PublisherInternals.abandonSocket(publisher); // as the watchdog does for another call; the client recovers
            caller.join(20_000);
            assertThat(result.get()).isNotNull();

            Set<UUID> received = broker.awaitReceived(warmUp + batch.size(), Duration.ofSeconds(5)).stream()
                    .map(ReceivedMessage::eventId).collect(Collectors.toSet());
            List<PublishOutcome> notAttemptedButReceived = result.get().stream()
                    .filter(o -> o instanceof PublishOutcome.NotAttempted && received.contains(o.eventId())).toList();
            assertThat(notAttemptedButReceived)
                    .as("%d of %d received by the consumer; outcomes: %d acked, %d retriable, %d not attempted; "
                            + "answered not attempted although written (first: %s)",
                            received.size() - warmUp, batch.size(),
                            result.get().stream().filter(PublishOutcome::isAcked).count(),
                            result.get().stream().filter(o -> o instanceof PublishOutcome.RetriableFailure).count(),
                            result.get().stream().filter(o -> o instanceof PublishOutcome.NotAttempted).count(),
                            notAttemptedButReceived.isEmpty() ? "-" : notAttemptedButReceived.get(0))
                    .isEmpty();
        }
    }

    private static Field field(Class<?> owner, String name) throws NoSuchFieldException {
        Field field = owner.getDeclaredField(name);
        field.setAccessible(true);
        return field;
    }
}
