package io.queuebox.rabbitmq;

import static io.queuebox.testkit.fixtures.OutboxFixtures.claimedDeliveriesOf;
import static io.queuebox.testkit.fixtures.OutboxFixtures.interleavedEvents;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.queuebox.ports.Health;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.testkit.faults.TcpProxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
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
             RabbitMqMessagePublisher publisher = ackingThrough(proxy, 1000)) {
            assertThat(publisher.health().status()).isEqualTo(Health.Status.UP);

            proxy.cut();
            List<PublishOutcome> silent = publisher.publish(claimedDeliveriesOf(interleavedEvents(2, 2)));
            assertThat(silent).noneMatch(PublishOutcome::isAcked);
            Health health = publisher.health();
            assertThat(health.status()).as(health.detail()).isEqualTo(Health.Status.DOWN);
            assertThat(health.detail()).contains("no answer from RabbitMQ").contains("open connection");

            proxy.restore();
            awaitAcksAgain(publisher);
            assertThat(publisher.health().status()).isEqualTo(Health.Status.UP);
        }
    }

    /**
     * A network that drops what the relay sends (no reset, no heartbeat to notice): once the socket's buffers are full
     * the client's write blocks, and a call must still end at its confirm timeout (found by review: the messages were
     * written on the calling thread, so the call waited as long as the write).
     */
    @Test
    void aNetworkThatStopsTakingWhatThePublisherWritesStillEndsTheCallAtItsConfirmTimeout() throws Exception {
        try (TcpProxy proxy = broker.proxy();
             RabbitMqMessagePublisher publisher = ackingThrough(proxy, 2000)) {

            proxy.jamClient();
            // 64 MiB: more than the kernel's socket buffers on both sides of the proxy can take (tcp_wmem 4 MiB,
            // tcp_rmem 32 MiB at most here).
            byte[] payload = new byte[128 * 1024];
            List<OutboxEvent> events = new ArrayList<>();
            for (int i = 0; i < 512; i++) {
                events.add(OutboxEvent.of("order", "jammed-" + i, "Placed", payload));
            }
            List<PublishOutcome> outcomes = assertTimeoutPreemptively(Duration.ofSeconds(5),
                    () -> publisher.publish(claimedDeliveriesOf(events)),
                    "a call whose writes block must still end at confirm.timeout.ms (2 s)");

            assertThat(outcomes).hasSize(events.size()).noneMatch(PublishOutcome::isAcked);
            assertThat(outcomes).as("what was never handed to the socket is not attempted").anyMatch(
                    outcome -> outcome instanceof PublishOutcome.NotAttempted);

            proxy.restore();
            awaitAcksAgain(publisher);
        }
    }

    /**
     * A slow but healthy broker (every chunk held 150 ms each way) and batches to exchanges that do not exist, whose
     * passive declares once ran a call past its bound while it waited for answers, not while it wrote: the connection
     * must stay, so a worker publishing beside it keeps getting acks (found by review of the write watchdog: it closed
     * the connection, and 844 healthy messages in 12 s were answered not attempted). The RPCs now run off the calling
     * thread, which waits for them only until its bound: no call runs late at all.
     */
    @Test
    void aSlowBrokersAnswersNeitherRunACallLateNorCostTheConnection() throws Exception {
        try (TcpProxy proxy = broker.proxy();
             RabbitMqMessagePublisher publisher = ackingThrough(proxy, 2000)) {
            proxy.delay(Duration.ofMillis(150));
            long end = System.nanoTime() + Duration.ofSeconds(8).toNanos();
            List<PublishOutcome> healthy = new CopyOnWriteArrayList<>();
            Thread worker = new Thread(() -> {
                while (System.nanoTime() < end) {
                    healthy.addAll(publisher.publish(claimedDeliveriesOf(interleavedEvents(2, 1))));
                }
            });
            worker.start();
            int calls = 0;
            long longestNanos = 0;
            while (System.nanoTime() < end) {
                List<OutboxEvent> misdirected = new ArrayList<>();
                for (int i = 0; i < 12; i++) {
                    misdirected.add(OutboxEvent.of("order", "missing-" + i, "Placed", new byte[10])
                            .withDestination("no-such-exchange-" + i));
                }
                long start = System.nanoTime();
                publisher.publish(claimedDeliveriesOf(misdirected));
                longestNanos = Math.max(longestNanos, System.nanoTime() - start);
                calls++;
            }
            worker.join();

            assertThat(healthy).as("the healthy worker's outcomes").isNotEmpty().allMatch(PublishOutcome::isAcked);
            // The passive declares of twelve exchanges, 300 ms each, would take 3.6 s: the call waits for them only
            // until its bound (2 s), and the watchdog's grace (250 ms) is never reached.
            assertThat(calls).as("calls to missing exchanges").isPositive();
            assertThat(Duration.ofNanos(longestNanos)).as("the longest of those calls")
                    .isLessThan(Duration.ofMillis(2250));
        }
    }

    /** A publisher through {@code proxy}, without heartbeats (only the publisher's own bounds notice), seen acking. */
    private RabbitMqMessagePublisher ackingThrough(TcpProxy proxy, int confirmTimeoutMs) {
        RabbitMqMessagePublisher publisher = RabbitMqMessagePublisher.create(broker.settingsThrough(proxy)
                .set("confirm.timeout.ms", Integer.toString(confirmTimeoutMs)).set("heartbeat.seconds", "0").build());
        assertThat(publisher.publish(claimedDeliveriesOf(interleavedEvents(2, 2)))).allMatch(PublishOutcome::isAcked);
        return publisher;
    }

    private static void awaitAcksAgain(RabbitMqMessagePublisher publisher) {
        await().atMost(Duration.ofSeconds(15)).until(() -> publisher.publish(
                claimedDeliveriesOf(interleavedEvents(2, 2))).stream().allMatch(PublishOutcome::isAcked));
    }
}
