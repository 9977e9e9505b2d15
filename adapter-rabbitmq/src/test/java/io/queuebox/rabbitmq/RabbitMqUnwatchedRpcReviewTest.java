package io.queuebox.rabbitmq;

import static io.queuebox.testkit.fixtures.OutboxFixtures.claimedDeliveriesOf;
import static io.queuebox.testkit.fixtures.OutboxFixtures.interleavedEvents;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.testkit.faults.TcpProxy;
import java.io.IOException;
import java.lang.reflect.Field;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The RPCs a call needs (channel open and confirm select, passive declare) now run on threads of their own, which the
 * write watchdog does not watch: it only looks at the calling thread's marked regions, and the caller waits for the
 * RPC in a timed wait outside any. When the connection's socket buffers are full (a network that drops what the relay
 * sends without a reset; here an unwatched writer on the connection, standing for the channel closer, the silence
 * probe or the last publish that filled the buffers, is blocked in its write), the RPC thread blocks in its write for
 * ever (heartbeats off), holding the pool's permit or the exchange's probe entry, and the socket is never closed: the
 * publisher answers "not attempted" for good although a new connection would get through. Before 264bca1 the RPC ran
 * on the calling thread inside a watched region, and the watchdog closed the socket a moment after the call's bound.
 */
class RabbitMqUnwatchedRpcReviewTest {

    private final RabbitMqTestBroker broker = new RabbitMqTestBroker("#");

    @AfterEach
    void removeTheTopology() {
        broker.close();
    }

    @Test
    void aChannelOpenBlockedInAWriteStillGetsTheConnectionReplaced() throws Exception {
        try (TcpProxy proxy = proxyToTheBroker();
             RabbitMqMessagePublisher publisher = RabbitMqMessagePublisher.create(through(proxy)
                     .set("confirm.timeout.ms", "1000").set("heartbeat.seconds", "0").set("channels", "1")
                     .set("recovery.interval.ms", "200").build())) {
            assertThat(publisher.publish(claimedDeliveriesOf(interleavedEvents(1, 1)))).allMatch(PublishOutcome::isAcked);
            Channel writer = PublisherInternals.connection(publisher).createChannel();

            proxy.jamExisting(); // this connection's packets are dropped from now on; a new connection gets through
            // Its message is written, no confirm comes: the only channel is given up as not reusable.
            assertThat(publisher.publish(claimedDeliveriesOf(interleavedEvents(1, 1)))).noneMatch(PublishOutcome::isAcked);
            Thread filler = fillTheBuffers(writer);

            List<String> seen;
            String state;
            try {
                seen = keepPublishing(publisher, Duration.ofSeconds(12));
                state = "filler " + filler.getState() + ", " + rpcThreads();
            } finally {
                PublisherInternals.abandonSocket(publisher); // only so that closing the publisher does not wait behind the writer
            }

            assertThat(seen).as("outcomes of calls on a jammed connection a new one could replace (%s)", state)
                    .contains("ACKED");
        }
    }

    @Test
    void aPassiveDeclareBlockedInAWriteStillGetsTheConnectionReplaced() throws Exception {
        String fresh = broker.exchange + ".fresh";
        declareBoundExchange(fresh);
        try (TcpProxy proxy = proxyToTheBroker();
             RabbitMqMessagePublisher publisher = RabbitMqMessagePublisher.create(through(proxy)
                     .set("confirm.timeout.ms", "1000").set("heartbeat.seconds", "0")
                     .set("recovery.interval.ms", "200").build())) {
            assertThat(publisher.publish(claimedDeliveriesOf(interleavedEvents(1, 1)))).allMatch(PublishOutcome::isAcked);
            Channel writer = PublisherInternals.connection(publisher).createChannel();

            proxy.jamExisting();
            Thread filler = fillTheBuffers(writer);

            List<String> seen = new ArrayList<>();
            String state;
            long end = System.nanoTime() + Duration.ofSeconds(12).toNanos();
            try {
                while (System.nanoTime() < end && !seen.contains("ACKED")) {
                    // An exchange this publisher has not checked yet: its passive declare runs before anything is published.
                    OutboxEvent event = OutboxEvent.of("order", "fresh-1", "Placed", new byte[10]).withDestination(fresh);
                    seen.addAll(describe(publisher.publish(claimedDeliveriesOf(List.of(event)))));
                }
                state = "filler " + filler.getState() + ", " + rpcThreads() + ", probes " + probesOf(publisher);
            } finally {
                PublisherInternals.abandonSocket(publisher);
            }

            assertThat(seen).as("outcomes of calls to an exchange not yet checked (%s)", state).contains("ACKED");
        } finally {
            deleteExchange(fresh);
        }
    }

    /** Writes on the publisher's connection until the socket's buffers are full and the write blocks. */
    private static Thread fillTheBuffers(Channel writer) {
        AtomicLong written = new AtomicLong();
        Thread filler = new Thread(() -> {
            byte[] chunk = new byte[1 << 20];
            try {
                while (true) {
                    writer.basicPublish("", "queuebox-review-nowhere", null, chunk);
                    written.incrementAndGet();
                }
            } catch (IOException | RuntimeException e) {
                // the socket was closed
            }
        }, "test-unwatched-writer");
        filler.setDaemon(true);
        filler.start();
        long[] last = {-1};
        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(500)).until(() -> {
            long now = written.get();
            boolean stuck = now == last[0] && now > 0;
            last[0] = now;
            return stuck;
        });
        return filler;
    }

    private static List<String> keepPublishing(RabbitMqMessagePublisher publisher, Duration during) {
        List<String> seen = new ArrayList<>();
        long end = System.nanoTime() + during.toNanos();
        while (System.nanoTime() < end && !seen.contains("ACKED")) {
            seen.addAll(describe(publisher.publish(claimedDeliveriesOf(interleavedEvents(1, 1)))));
        }
        return seen;
    }

    private static List<String> describe(List<PublishOutcome> outcomes) {
        return outcomes.stream().map(o -> o.isAcked() ? "ACKED" : o.toString()).distinct().toList();
    }

    private static String rpcThreads() {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals("queuebox-rabbitmq-rpc"))
                .map(t -> t.getState().toString()).collect(Collectors.groupingBy(s -> s, Collectors.counting()))
                + " rpc threads";
    }

    private TcpProxy proxyToTheBroker() throws IOException {
        URI server = URI.create(broker.uri);
        return new TcpProxy(server.getHost(), server.getPort() < 0 ? 5672 : server.getPort());
    }

    private RabbitMqSettings.Builder through(TcpProxy proxy) {
        URI server = URI.create(broker.uri);
        return broker.settings().set("uri",
                broker.uri.replace(server.getHost() + ":" + server.getPort(), "127.0.0.1:" + proxy.port()));
    }

    private static Object probesOf(RabbitMqMessagePublisher publisher) {
        try {
            Field probes = RabbitMqMessagePublisher.class.getDeclaredField("exchangeProbes");
            probes.setAccessible(true);
            return probes.get(publisher);
        } catch (ReflectiveOperationException e) {
            return "none";
        }
    }

    private void declareBoundExchange(String name) throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(broker.uri);
        try (Connection connection = factory.newConnection("queuebox-review-setup");
             Channel channel = connection.createChannel()) {
            channel.exchangeDeclare(name, "topic", false, false, null);
            channel.queueBind(broker.queue, name, "#");
        }
    }

    private void deleteExchange(String name) throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(broker.uri);
        try (Connection connection = factory.newConnection("queuebox-review-setup");
             Channel channel = connection.createChannel()) {
            channel.exchangeDelete(name);
        }
    }
}
