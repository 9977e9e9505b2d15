package io.queuebox.rabbitmq;

import static io.queuebox.testkit.fixtures.OutboxFixtures.claimedDeliveriesOf;
import static io.queuebox.testkit.fixtures.OutboxFixtures.interleavedEvents;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Connection;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.testkit.faults.TcpProxy;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The connection is closed (by the watchdog for another call, a missed heartbeat, the broker) and recovered while a call
 * is between two publishes of its first round, a pause longer than the recovery (a GC pause or a starved CPU; here the
 * caller is suspended outside the client). Its channel is an auto-recovering one: the next publishes go to the
 * recovered channel, whose sequence numbers start at 1 again, overwriting entries of the old channel in
 * {@code unconfirmed}; the old channel's confirms, queued before its close, then settle the new messages.
 */
class RabbitMqRecoveredChannelAckReviewTest {

    private final RabbitMqTestBroker broker = new RabbitMqTestBroker("#");

    @AfterEach
    void removeTheTopology() {
        broker.close();
    }

    @Test
    @SuppressWarnings({"deprecation", "removal"})
    void noMessageIsAckedThatTheBrokerNeverGot() throws Exception {
        try (TcpProxy proxy = broker.proxy();
             RabbitMqMessagePublisher publisher = RabbitMqMessagePublisher.create(broker.settingsThrough(proxy)
                     .set("confirm.timeout.ms", "30000").set("heartbeat.seconds", "0").set("channels", "1")
                     .set("recovery.interval.ms", "100").build())) {
            assertThat(publisher.publish(claimedDeliveriesOf(interleavedEvents(2, 2)))).allMatch(PublishOutcome::isAcked);
            int warmUp = 4;

            List<ClaimedDelivery> batch = claimedDeliveriesOf(interleavedEvents(20_000, 1));
            AtomicReference<List<PublishOutcome>> result = new AtomicReference<>();
            Thread caller = new Thread(() -> result.set(publisher.publish(batch)), "test-call");
            caller.setDaemon(true);
            caller.start();
            Thread.sleep(50);
            int tries = 0;
            while (true) {
                caller.suspend();
                StackTraceElement[] stack = caller.getStackTrace();
                boolean inClient = Arrays.stream(stack).anyMatch(f -> f.getClassName().startsWith("com.rabbitmq"));
                boolean publishing = Arrays.stream(stack).anyMatch(f -> f.getMethodName().equals("publishNext"))
                        && Arrays.stream(stack).noneMatch(f -> f.getMethodName().equals("confirm"));
                if (publishing && !inClient) {
                    break; // between two publishes of the first round, outside the client
                }
                caller.resume();
                assertThat(++tries).as("tries to catch the call between two publishes").isLessThan(100_000);
                Thread.onSpinWait();
            }

            PublisherInternals.abandonSocket(publisher);
            Connection connection = PublisherInternals.connection(publisher);
            await().atMost(Duration.ofSeconds(15)).until(connection::isOpen); // recovered, channels first
            proxy.cut(); // nothing written from now on reaches the broker
            caller.resume();
            caller.join(60_000);

            Set<UUID> acked = result.get().stream().filter(PublishOutcome::isAcked).map(PublishOutcome::eventId)
                    .collect(Collectors.toSet());
            Set<UUID> received = broker.awaitReceived(warmUp + acked.size(), Duration.ofSeconds(10)).stream()
                    .map(m -> m.eventId()).collect(Collectors.toSet());
            Set<UUID> ackedNotReceived = acked.stream().filter(id -> !received.contains(id)).collect(Collectors.toSet());
            long notAttemptedButReceived = result.get().stream()
                    .filter(o -> o instanceof PublishOutcome.NotAttempted && received.contains(o.eventId())).count();
            assertThat(ackedNotReceived).as("%s acked, %s received (%s of them answered not attempted), of %s: "
                    + "%s acked but never at the broker", acked.size(), received.size() - warmUp,
                    notAttemptedButReceived, batch.size(), ackedNotReceived.size()).isEmpty();
        }
    }

}
