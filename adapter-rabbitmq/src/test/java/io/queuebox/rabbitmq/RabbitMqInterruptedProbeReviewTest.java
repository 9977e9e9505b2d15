package io.queuebox.rabbitmq;

import static io.queuebox.testkit.fixtures.OutboxFixtures.claimedDeliveriesOf;
import static io.queuebox.testkit.fixtures.OutboxFixtures.interleavedEvents;
import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.testkit.faults.TcpProxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A call interrupted while it waits for a passive declare (BoundedRpcs.await in exchangeExists) takes the interrupt
 * for "the exchange exists", goes on, and writes the head of every chain before its confirm wait notices the flag;
 * it then answers them retriable (duplicates) and marks an answering connection silent (health DOWN). The same
 * interrupt while waiting for a channel (ChannelPool.borrow) answers the batch not attempted, writing nothing.
 */
class RabbitMqInterruptedProbeReviewTest {

    private final RabbitMqTestBroker broker = new RabbitMqTestBroker("#");

    @AfterEach
    void removeTheTopology() {
        broker.close();
    }

    @Test
    void aCallInterruptedWhileItWaitsForAPassiveDeclareWritesNothingMore() throws Exception {
        try (TcpProxy proxy = broker.proxy();
             RabbitMqMessagePublisher publisher = RabbitMqMessagePublisher.create(broker.settingsThrough(proxy)
                     .set("confirm.timeout.ms", "5000").set("channels", "1").build())) {
            // Connected, one idle channel, the test's exchange not probed yet (the warm-up goes to the unbound one).
            OutboxEvent warm = OutboxEvent.of("order", "warm", "Placed", "{}".getBytes(StandardCharsets.UTF_8))
                    .withDestination(broker.unboundExchange);
            assertThat(publisher.publish(claimedDeliveriesOf(warm))).noneMatch(o -> o instanceof PublishOutcome.NotAttempted);

            proxy.delay(Duration.ofMillis(700)); // the probe's channel.open takes a while to be answered
            List<ClaimedDelivery> batch = claimedDeliveriesOf(interleavedEvents(10, 1));
            AtomicReference<List<PublishOutcome>> result = new AtomicReference<>();
            Thread caller = new Thread(() -> result.set(publisher.publish(batch)), "test-call");
            caller.setDaemon(true);
            caller.start();
            long until = System.nanoTime() + 3_000_000_000L;
            while (Arrays.stream(caller.getStackTrace()).noneMatch(f -> f.getMethodName().equals("await")
                    && f.getClassName().endsWith("BoundedRpcs"))) {
                assertThat(System.nanoTime()).as("the call waits for the probe").isLessThan(until);
                Thread.onSpinWait();
            }
            caller.interrupt();
            caller.join(10_000);
            String health = publisher.health().toString();

            int received = broker.awaitReceived(batch.size(), Duration.ofSeconds(4)).size();
            assertThat(received).as("written after the interrupt (outcomes: %s; health right after: %s)",
                    result.get().stream().map(o -> o.getClass().getSimpleName()).distinct().toList(), health)
                    .isZero();
        }
    }
}
