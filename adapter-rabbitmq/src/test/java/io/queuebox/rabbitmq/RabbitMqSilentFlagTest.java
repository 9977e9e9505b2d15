package io.queuebox.rabbitmq;

import static io.queuebox.testkit.fixtures.OutboxFixtures.claimedDeliveriesOf;
import static io.queuebox.testkit.fixtures.OutboxFixtures.interleavedEvents;
import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.Health;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.testkit.faults.TcpProxy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Review of issue 12 ('silent' health state): silentSinceNanos is set by a call that heard nothing before its
 * bound and cleared only by a later call that hears something (or by a connection recovery). When the network
 * comes back within the heartbeat window (no recovery) and this relay has nothing more to publish (its in-doubt
 * rows retried by another relay, a long backoff, a quiet period), the required 'broker' readiness component stays
 * DOWN on a healthy connection, its "no answer for" duration growing forever.
 */
class RabbitMqSilentFlagTest {

    private final RabbitMqTestBroker broker = new RabbitMqTestBroker("#");

    @AfterEach
    void removeTheTopology() {
        broker.close();
    }

    @Test
    void aShortSilenceDoesNotKeepAHealthyConnectionDownWhileNothingElseIsPublished() throws Exception {
        try (TcpProxy proxy = broker.proxy();
             RabbitMqMessagePublisher publisher = RabbitMqMessagePublisher.create(broker.settingsThrough(proxy)
                     .set("confirm.timeout.ms", "1000").build())) { // default heartbeat (10 s)
            assertThat(publisher.publish(claimedDeliveriesOf(interleavedEvents(2, 2)))).allMatch(PublishOutcome::isAcked);

            proxy.cut();
            assertThat(publisher.publish(claimedDeliveriesOf(interleavedEvents(2, 2)))).noneMatch(PublishOutcome::isAcked);
            assertThat(publisher.health().detail()).as("precondition").contains("no answer from RabbitMQ");
            proxy.restore(); // back within the heartbeat window: the connection never closed, nothing recovers

            Thread.sleep(5000); // the late confirms and heartbeats have flowed; this relay publishes nothing more

            Health after = publisher.health();
            assertThat(after.status()).as(after.detail()).isEqualTo(Health.Status.UP);
        }
    }
}
