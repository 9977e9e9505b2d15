package io.queuebox.rabbitmq;

import static io.queuebox.testkit.fixtures.OutboxFixtures.claimedDeliveriesOf;
import static io.queuebox.testkit.fixtures.OutboxFixtures.interleavedEvents;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.testkit.faults.TcpProxy;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The watchdog closes the connection's socket for one blocked call; every other call of that moment, waiting for its
 * confirms, hears its channel close and gives it back closed. The pool's discard skips a closed channel (no abort), so
 * it stays registered with the auto-recovering connection, and every recovery after reopens it (an RPC, a channel
 * number and a broker process each), outside the pool: one more channel per call caught by each close.
 */
class RabbitMqOrphanChannelReviewTest {

    private final RabbitMqTestBroker broker = new RabbitMqTestBroker("#");

    @AfterEach
    void removeTheTopology() {
        broker.close();
    }

    @Test
    void channelsOfCallsCaughtByAWatchdogCloseAreNotReopenedByRecovery() throws Exception {
        try (TcpProxy proxy = broker.proxy();
             RabbitMqMessagePublisher publisher = RabbitMqMessagePublisher.create(broker.settingsThrough(proxy)
                     .set("confirm.timeout.ms", "3000").set("heartbeat.seconds", "0").set("channels", "1")
                     .set("recovery.interval.ms", "200").build())) {
            assertThat(publisher.publish(claimedDeliveriesOf(interleavedEvents(2, 2)))).allMatch(PublishOutcome::isAcked);

            List<Long> openAfterEachRound = new ArrayList<>();
            for (int round = 0; round < 3; round++) {
                proxy.cut(); // the call's message is written; no confirm comes
                CompletableFuture<List<PublishOutcome>> waiting = CompletableFuture.supplyAsync(
                        () -> publisher.publish(claimedDeliveriesOf(interleavedEvents(1, 1))));
                Thread.sleep(300);
                PublisherInternals.abandonSocket(publisher); // as it does for another call blocked in a write
                assertThat(waiting.get(10, TimeUnit.SECONDS)).noneMatch(PublishOutcome::isAcked);
                proxy.restore();
                await().atMost(Duration.ofSeconds(15)).until(() -> publisher.publish(
                        claimedDeliveriesOf(interleavedEvents(2, 2))).stream().allMatch(PublishOutcome::isAcked));
                openAfterEachRound.add(openChannels(publisher));
            }

            assertThat(openAfterEachRound).as("channels open on the connection of a pool of 1, after each round")
                    .allMatch(open -> open <= 1);
        }
    }

    private static long openChannels(RabbitMqMessagePublisher publisher) throws Exception {
        Connection connection = PublisherInternals.connection(publisher);
        Field channelsField = connection.getClass().getDeclaredField("channels");
        channelsField.setAccessible(true);
        Map<?, ?> channels = (Map<?, ?>) channelsField.get(connection);
        return channels.values().stream().filter(c -> ((Channel) c).isOpen()).count();
    }
}
