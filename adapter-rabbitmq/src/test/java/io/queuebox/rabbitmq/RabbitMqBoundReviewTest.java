package io.queuebox.rabbitmq;

import static io.queuebox.testkit.fixtures.OutboxFixtures.claimedDeliveriesOf;
import static io.queuebox.testkit.fixtures.OutboxFixtures.interleavedEvents;
import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.PublishOutcome;
import io.queuebox.testkit.faults.TcpProxy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Bounded publish time on a network that stops forwarding (no reset): a call that waited for a free channel most of
 * its bound then opens a channel, an RPC bounded by confirm.timeout.ms itself. The call waits for the answer in a timed
 * wait, which the watchdog leaves alone, so it lasts about twice its bound.
 */
class RabbitMqBoundReviewTest {

    private final RabbitMqTestBroker broker = new RabbitMqTestBroker("#");

    @AfterEach
    void removeTheTopology() {
        broker.close();
    }

    @Test
    void aCallThatWaitedForTheOnlyChannelStillEndsNearItsBoundOnASilentNetwork() throws Exception {
        try (TcpProxy proxy = broker.proxy();
             RabbitMqMessagePublisher publisher = RabbitMqMessagePublisher.create(broker.settingsThrough(proxy)
                     .set("confirm.timeout.ms", "1000").set("heartbeat.seconds", "0").set("channels", "1").build())) {
            assertThat(publisher.publish(claimedDeliveriesOf(interleavedEvents(1, 1)))).allMatch(PublishOutcome::isAcked);

            proxy.cut();
            // Holds the only channel for its whole bound (no confirm comes), then gives it up as not reusable.
            CompletableFuture<List<PublishOutcome>> first = CompletableFuture.supplyAsync(
                    () -> publisher.publish(claimedDeliveriesOf(interleavedEvents(1, 1))));
            Thread.sleep(100);
            long start = System.nanoTime();
            List<PublishOutcome> second = publisher.publish(claimedDeliveriesOf(interleavedEvents(1, 1)));
            long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            first.get(10, TimeUnit.SECONDS);

            assertThat(second).noneMatch(PublishOutcome::isAcked);
            // confirm.timeout.ms (1 s) plus the watchdog's grace (250 ms) plus slack.
            assertThat(tookMs).as("the second call's duration, ms (%s)", second).isLessThan(1_500);
            proxy.restore();
        }
    }
}
