package io.queuebox.rabbitmq;

import static io.queuebox.testkit.fixtures.OutboxFixtures.anEvent;
import static io.queuebox.testkit.fixtures.OutboxFixtures.claimedDeliveriesOf;
import static io.queuebox.testkit.fixtures.OutboxFixtures.interleavedEvents;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A memory alarm (watermark set to 0, restored to 0.4 in a finally): the broker blocks a connection once it
 * publishes and stops reading from it. A publish call must still end within confirm.timeout.ms, send nothing
 * while the connection is blocked, and say so in health.
 */
class RabbitMqResourceAlarmTest {

    private static final long BOUND_MS = 3_000;

    private final RabbitMqTestBroker broker = new RabbitMqTestBroker("#");

    @AfterEach
    void removeTheTopology() {
        broker.close();
    }

    @Test
    void whileAnAlarmBlocksTheConnectionCallsAreAnsweredNotAttemptedWithinTheBoundAndHealthSaysBlocked() {
        List<OutboxEvent> events = interleavedEvents(50, 1);
        try (RabbitMqMessagePublisher warm = publisher(); RabbitMqMessagePublisher cold = publisher()) {
            assertThat(warm.publish(claimedDeliveriesOf(anEvent()))).allMatch(PublishOutcome::isAcked);
            try {
                RabbitMqCtl.run("set_vm_memory_high_watermark", "0");
                // The broker tells a connection it is blocked once it publishes during the alarm, and stops
                // reading from it: that first message waits, unconfirmed, within the bound (in doubt).
                await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100)).until(() -> {
                    long start = System.nanoTime();
                    boolean acked = warm.publish(claimedDeliveriesOf(anEvent())).get(0).isAcked();
                    assertThat((System.nanoTime() - start) / 1_000_000).isLessThan(BOUND_MS + 1_000);
                    return !acked;
                });

                long start = System.nanoTime();
                List<PublishOutcome> outcomes = warm.publish(claimedDeliveriesOf(events));
                long tookMs = (System.nanoTime() - start) / 1_000_000;
                System.out.printf("RabbitMQ blocked, 50 aggregates: %d ms (confirm.timeout.ms %d)%n", tookMs, BOUND_MS);
                assertThat(tookMs).isLessThan(BOUND_MS + 1_000);
                assertThat(outcomes).as("nothing is sent to a blocked connection").allSatisfy(o -> assertThat(o)
                        .isInstanceOfSatisfying(PublishOutcome.NotAttempted.class,
                                notAttempted -> assertThat(notAttempted.reason()).contains("blocked")));
                assertThat(warm.health().detail()).startsWith("blocked: ").contains("memory");
                assertThat(warm.health().isUp()).isFalse();

                // A publisher that never published learns of the alarm only from its first publish: bounded too.
                start = System.nanoTime();
                List<PublishOutcome> first = cold.publish(claimedDeliveriesOf(events));
                tookMs = (System.nanoTime() - start) / 1_000_000;
                System.out.printf("RabbitMQ blocked, first call of a new connection: %d ms%n", tookMs);
                assertThat(tookMs).isLessThan(BOUND_MS + 1_000);
                assertThat(first).noneMatch(PublishOutcome::isAcked);
            } finally {
                RabbitMqCtl.run("set_vm_memory_high_watermark", "0.4");
            }
            await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(100))
                    .until(() -> warm.publish(claimedDeliveriesOf(anEvent())).get(0).isAcked());
            assertThat(warm.health().isUp()).isTrue();
        }
    }

    private RabbitMqMessagePublisher publisher() {
        return RabbitMqMessagePublisher.create(broker.settings().set("confirm.timeout.ms", String.valueOf(BOUND_MS))
                .build());
    }
}
