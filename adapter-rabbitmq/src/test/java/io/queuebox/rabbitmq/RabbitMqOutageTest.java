package io.queuebox.rabbitmq;

import static io.queuebox.testkit.fixtures.OutboxFixtures.anAggregateId;
import static io.queuebox.testkit.fixtures.OutboxFixtures.anEvent;
import static io.queuebox.testkit.fixtures.OutboxFixtures.anEventFor;
import static io.queuebox.testkit.fixtures.OutboxFixtures.claimedDeliveriesOf;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.testkit.publisher.ReceivedMessage;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The broker drops the publisher's connection while batches are in flight (closed by name with
 * {@code rabbitmqctl}, the other connections stay up): unconfirmed messages are retriable, the rest not
 * attempted (which of the two a batch gets depends on when the drop lands), every acked message is in the
 * queue, and the publisher recovers by itself.
 */
class RabbitMqOutageTest {

    private final RabbitMqTestBroker broker = new RabbitMqTestBroker("#");

    @AfterEach
    void removeTheTopology() {
        broker.close();
    }

    @Test
    void aConnectionClosedMidBatchGivesNoPermanentFailureNoFalseAcksAndRecovers() throws Exception {
        List<String> aggregates = new ArrayList<>();
        for (int a = 0; a < 8; a++) {
            aggregates.add(anAggregateId());
        }
        List<OutboxEvent> sent = new ArrayList<>();
        List<PublishOutcome> answered = new ArrayList<>();
        try (RabbitMqMessagePublisher publisher = RabbitMqMessagePublisher.create(broker.settings()
                .set("recovery.interval.ms", "3000").set("confirm.timeout.ms", "5000").build())) {
            CompletableFuture<List<PublishOutcome>> failingBatch = CompletableFuture.supplyAsync(() -> {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(40);
                for (int round = 0; System.nanoTime() < deadline; round++) {
                    List<OutboxEvent> batch = new ArrayList<>();
                    for (int i = 1; i <= 50; i++) {
                        for (String aggregate : aggregates) {
                            batch.add(anEventFor(aggregate, round * 50 + i));
                        }
                    }
                    List<PublishOutcome> outcomes = publisher.publish(claimedDeliveriesOf(batch));
                    sent.addAll(batch);
                    answered.addAll(outcomes);
                    if (!outcomes.stream().allMatch(PublishOutcome::isAcked)) {
                        return outcomes;
                    }
                }
                throw new AssertionError("the connection was never lost");
            });
            broker.awaitDeliveries(400, Duration.ofSeconds(20));

            closeConnection(broker.exchange);

            List<PublishOutcome> outcomes = failingBatch.get(30, TimeUnit.SECONDS);
            // Whether the drop lands while messages await their confirms (retriable, in doubt) or between two
            // sends (not attempted) is up to timing; neither may be permanent or a false ack.
            assertThat(outcomes).noneMatch(o -> o instanceof PublishOutcome.PermanentFailure)
                    .anyMatch(o -> !o.isAcked());
            assertThatEachAggregateHasAnAckedPrefix(sent, answered);

            // Still disconnected (the client waits 3 s before reconnecting): not attempted at once, health down.
            assertThat(publisher.publish(claimedDeliveriesOf(anEvent())))
                    .allMatch(o -> o instanceof PublishOutcome.NotAttempted);
            assertThat(publisher.health().isUp()).isFalse();

            Set<UUID> acked = new HashSet<>();
            for (int i = 0; i < sent.size(); i++) {
                if (answered.get(i).isAcked()) {
                    acked.add(sent.get(i).eventId());
                }
            }
            List<ReceivedMessage> received = broker.awaitReceived(acked.size(), Duration.ofSeconds(10));
            assertThat(received.stream().map(ReceivedMessage::eventId).collect(Collectors.toSet()))
                    .as("every acked message is in the queue").containsAll(acked);
            Map<String, List<Integer>> indexByAggregate = received.stream().collect(Collectors.groupingBy(
                    ReceivedMessage::key, Collectors.mapping(RabbitMqOutageTest::indexOf, Collectors.toList())));
            indexByAggregate.forEach((aggregate, indices) ->
                    assertThat(indices).as("order of %s", aggregate).isSorted());

            // Automatic recovery: publishing works again without a new publisher.
            await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(200)).until(() ->
                    publisher.publish(claimedDeliveriesOf(anEvent())).get(0).isAcked());
            assertThat(publisher.health().isUp()).isTrue();
        }
    }

    private static void assertThatEachAggregateHasAnAckedPrefix(List<OutboxEvent> sent, List<PublishOutcome> answered) {
        Map<String, List<Boolean>> ackedByAggregate = new java.util.LinkedHashMap<>();
        for (int i = 0; i < sent.size(); i++) {
            ackedByAggregate.computeIfAbsent(sent.get(i).aggregateId(), a -> new ArrayList<>())
                    .add(answered.get(i).isAcked());
        }
        ackedByAggregate.forEach((aggregate, acked) -> {
            int firstFailure = acked.indexOf(false);
            if (firstFailure >= 0) {
                assertThat(acked.subList(firstFailure, acked.size())).as("after the first failure of %s", aggregate)
                        .containsOnly(false);
            }
        });
    }

    private static int indexOf(ReceivedMessage message) {
        String payload = new String(message.payload(), StandardCharsets.UTF_8);
        return Integer.parseInt(payload.replaceAll(".*\"index\":(\\d+).*", "$1"));
    }

    /** Closes the broker side of the connections with this client-provided name, and only those. */
    private static void closeConnection(String connectionName) throws IOException, InterruptedException {
        String expression = "[rabbit_networking:close_connection(P, \"queuebox outage test\") || "
                + "P <- rabbit_networking:connections(), "
                + "lists:keyfind(<<\"connection_name\">>, 1, proplists:get_value(client_properties, "
                + "rabbit_networking:connection_info(P, [client_properties]), [])) =:= "
                + "{<<\"connection_name\">>, longstr, <<\"" + connectionName + "\">>}].";
        // The tool's input and output are files, so nothing of it can reach the test JVM's own streams.
        java.io.File log = java.io.File.createTempFile("rabbitmqctl-", ".log");
        log.deleteOnExit();
        Process process = new ProcessBuilder("rabbitmqctl", "eval", expression)
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                .redirectOutput(log).redirectErrorStream(true).start();
        boolean finished = process.waitFor(30, TimeUnit.SECONDS);
        if (!finished) {
            process.destroyForcibly();
        }
        String output = java.nio.file.Files.readString(log.toPath());
        assertThat(finished).as("rabbitmqctl finished: %s", output).isTrue();
        assertThat(process.exitValue()).as("rabbitmqctl: %s", output).isZero();
        assertThat(output).as("one connection closed").contains("[ok]");
    }
}
