package io.queuebox.rabbitmq;

import static io.queuebox.testkit.fixtures.OutboxFixtures.claimedDeliveriesOf;
import static io.queuebox.testkit.fixtures.OutboxFixtures.interleavedEvents;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.Health;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.testkit.faults.TcpProxy;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The network to RabbitMQ stops forwarding without closing the connection (found by the fault-injection
 * suite, scenario broker-network-cut): the health said UP for the whole cut while every call ended at its
 * confirm timeout with its messages in doubt.
 */
class RabbitMqSilentNetworkTest {

    private final RabbitMqTestBroker broker = new RabbitMqTestBroker("#");

    @AfterEach
    void removeTheTopology() {
        broker.close();
    }

    @Test
    void anOpenConnectionThatStopsAnsweringIsReportedDownUntilConfirmsFlowAgain() throws Exception {
        try (TcpProxy proxy = broker.proxy();
             RabbitMqMessagePublisher publisher = RabbitMqMessagePublisher.create(broker.settingsThrough(proxy)
                     .set("confirm.timeout.ms", "1000").set("heartbeat.seconds", "0").build())) {
            assertThat(publisher.publish(claimedDeliveriesOf(interleavedEvents(2, 2)))).allMatch(PublishOutcome::isAcked);
            assertThat(publisher.health().status()).isEqualTo(Health.Status.UP);

            proxy.cut();
            List<PublishOutcome> silent = publisher.publish(claimedDeliveriesOf(interleavedEvents(2, 2)));
            assertThat(silent).noneMatch(PublishOutcome::isAcked);
            Health health = publisher.health();
            assertThat(health.status()).as(health.detail()).isEqualTo(Health.Status.DOWN);
            assertThat(health.detail()).contains("no answer from RabbitMQ").contains("open connection");

            proxy.restore();
            await().atMost(Duration.ofSeconds(15)).until(() -> publisher.publish(
                    claimedDeliveriesOf(interleavedEvents(2, 2))).stream().allMatch(PublishOutcome::isAcked));
            assertThat(publisher.health().status()).isEqualTo(Health.Status.UP);
        }
    }
}
