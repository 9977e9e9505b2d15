package io.queuebox.rabbitmq;

import static io.queuebox.testkit.fixtures.OutboxFixtures.claimedDeliveriesOf;
import static io.queuebox.testkit.fixtures.OutboxFixtures.interleavedEvents;
import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.PublishOutcome;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * A "broker" that accepts TCP connections and never says a word of AMQP: the first connect hangs in the
 * handshake for {@code connection.timeout.ms}. Each publish call must still end within {@code confirm.timeout.ms},
 * concurrent callers included, and answer "not attempted": nothing reached a broker.
 */
class RabbitMqSilentBrokerTest {

    private static final long CONFIRM_TIMEOUT_MS = 1000;

    @Test
    void concurrentCallsEndWithinConfirmTimeoutWhileTheHandshakeHangs() throws Exception {
        List<Socket> held = new CopyOnWriteArrayList<>();
        try (ServerSocket server = new ServerSocket(0)) {
            Thread acceptor = new Thread(() -> {
                try {
                    while (true) {
                        held.add(server.accept());
                    }
                } catch (Exception closed) {
                    // the server socket closed: the test is over
                }
            });
            acceptor.setDaemon(true);
            acceptor.start();
            RabbitMqSettings settings = RabbitMqSettings.fromMap(Map.of(
                    "uri", "amqp://guest:guest@127.0.0.1:" + server.getLocalPort() + "/%2F",
                    "confirm.timeout.ms", String.valueOf(CONFIRM_TIMEOUT_MS), "connection.timeout.ms", "10000"));
            try (RabbitMqMessagePublisher publisher = RabbitMqMessagePublisher.create(settings)) {
                List<CompletableFuture<Long>> calls = new java.util.ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    calls.add(CompletableFuture.supplyAsync(() -> {
                        long start = System.nanoTime();
                        List<PublishOutcome> outcomes = publisher.publish(claimedDeliveriesOf(interleavedEvents(2, 2)));
                        long took = (System.nanoTime() - start) / 1_000_000;
                        System.out.printf("silent broker: call took %d ms (confirm.timeout.ms %d): %s%n", took,
                                CONFIRM_TIMEOUT_MS, outcomes.get(0));
                        assertThat(outcomes).allMatch(o -> o instanceof PublishOutcome.NotAttempted);
                        return took;
                    }));
                }
                for (CompletableFuture<Long> call : calls) {
                    long took = call.join();
                    assertThat(took).as("a call took %d ms", took).isLessThan(CONFIRM_TIMEOUT_MS + 300);
                }
            }
        } finally {
            for (Socket socket : held) {
                socket.close();
            }
        }
    }
}
