package io.queuebox.kafka;

import static io.queuebox.kafka.KafkaFixtures.anEventOf;
import static io.queuebox.kafka.KafkaFixtures.deliveriesOf;
import static io.queuebox.kafka.KafkaFixtures.publisher;
import static io.queuebox.kafka.KafkaFixtures.uniqueName;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.kafka.testing.InProcessKafka;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/**
 * A broker that is gone, or goes away mid-batch: bounded time; retriable outcomes only for what was in
 * flight, "not attempted" for the rest and for every call while Kafka is known to be down; delivery back
 * within seconds of the broker's return; and (read back after the restart) every acked message really is
 * in the topic.
 */
class KafkaOutageTest {

    // Shorter than the defaults so the suite stays quick; the defaults give the same shape in ~20 s.
    private static final Map<String, String> FAST_FAILING = Map.of("producer.max.block.ms", "2000",
            "producer.delivery.timeout.ms", "6000", "producer.request.timeout.ms", "2000", "publish.timeout.ms", "9000");

    @Test
    void fiftyAggregatesAgainstAClosedPortAreAnsweredNotAttemptedWithinThePublishTimeout() throws Exception {
        int closedPort;
        try (ServerSocket socket = new ServerSocket(0)) {
            closedPort = socket.getLocalPort();
        }
        List<OutboxEvent> events = IntStream.range(0, 50).mapToObj(i -> anEventOf("order", "o-" + i, "e" + i))
                .toList();
        // max.block.ms at its default (5 s): a wait per aggregate would take 50 x 5 s.
        try (KafkaMessagePublisher publisher = publisher("127.0.0.1:" + closedPort, Map.of(
                "publish.timeout.ms", "2000"))) {
            long start = System.nanoTime();

            List<PublishOutcome> outcomes = publisher.publish(deliveriesOf(events));

            Duration took = Duration.ofNanos(System.nanoTime() - start);
            System.out.printf("50 aggregates against a closed port: %d ms (publish.timeout.ms 2000)%n", took.toMillis());
            assertThat(took).isLessThan(Duration.ofMillis(2000 + 1000));
            assertThat(outcomes).hasSize(50).allSatisfy(outcome -> assertThat(outcome)
                    .isInstanceOf(PublishOutcome.NotAttempted.class));

            // Once the metadata wait has failed, Kafka is known down: later calls are answered at once.
            await().atMost(Duration.ofSeconds(10)).until(() -> !publisher.health().isUp());
            assertThat(publisher.health().detail()).startsWith("Kafka unavailable").contains("TimeoutException");
            long again = System.nanoTime();
            assertThat(publisher.publish(deliveriesOf(events))).allSatisfy(outcome -> assertThat(outcome)
                    .isInstanceOf(PublishOutcome.NotAttempted.class));
            assertThat(Duration.ofNanos(System.nanoTime() - again)).isLessThan(Duration.ofMillis(500));
        }
    }

    @Test
    void whileTheBrokerIsStoppedCallsSendNothingAndDeliveryResumesWithinSecondsOfItsReturn() throws Exception {
        try (InProcessKafka kafka = InProcessKafka.startDedicated()) {
            String topic = uniqueName("down");
            List<OutboxEvent> events = IntStream.range(0, 40)
                    .mapToObj(i -> anEventOf("order", "o-" + (i % 8), "e" + i).withDestination(topic)).toList();
            try (KafkaMessagePublisher publisher = publisher(kafka.bootstrap(), FAST_FAILING)) {
                assertThat(publisher.publish(deliveriesOf(events.subList(0, 8)))).allMatch(PublishOutcome::isAcked);
                kafka.stopBroker();
                try {
                    // The first call after the stop sends (its metadata is cached) and its records expire: in doubt.
                    // Under load the client may first see the connection drop (a retriable failure that does not
                    // tell "down"), so the calls go on until one ends in the outage; none may ack or park.
                    await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(10)).until(() -> {
                        List<PublishOutcome> first = publisher.publish(deliveriesOf(events.subList(8, 24)));
                        assertThat(first).noneMatch(PublishOutcome::isAcked)
                                .noneMatch(o -> o instanceof PublishOutcome.PermanentFailure);
                        return publisher.health().detail().startsWith("Kafka unavailable");
                    });

                    long start = System.nanoTime();
                    List<PublishOutcome> later = publisher.publish(deliveriesOf(events.subList(8, 40)));
                    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofMillis(500));
                    assertThat(later).as("a broker known to be down charges nothing")
                            .allSatisfy(o -> assertThat(o).isInstanceOf(PublishOutcome.NotAttempted.class));
                } finally {
                    kafka.restartBroker();
                }
                long back = System.nanoTime();
                await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100)).until(() ->
                        publisher.publish(deliveriesOf(events.subList(8, 40))).stream().allMatch(PublishOutcome::isAcked));
                System.out.printf("Kafka: delivery resumed %d ms after the broker was ready again%n",
                        Duration.ofNanos(System.nanoTime() - back).toMillis());
                assertThat(publisher.health().isUp()).isTrue();
            }
        }
    }

    @Test
    void aBrokerStoppedMidBatchLeavesAnAckedPrefixPerAggregateAndRetriableFailuresAfterIt() throws Exception {
        try (InProcessKafka kafka = InProcessKafka.startDedicated()) {
            String topic = uniqueName("outage");
            List<OutboxEvent> events = new ArrayList<>();
            for (int i = 0; i < 4000; i++) {
                events.add(anEventOf("order", "o-" + (i % 8), "e" + i).withDestination(topic));
            }
            List<ClaimedDelivery> batch = deliveriesOf(events);
            try (KafkaMessagePublisher publisher = publisher(kafka.bootstrap(), FAST_FAILING)) {
                // Topic metadata first, so the batch itself starts at full speed.
                assertThat(publisher.publish(deliveriesOf(List.of(anEventOf("order", "warm-up", "w")
                        .withDestination(topic))))).allMatch(PublishOutcome::isAcked);
                CompletableFuture<List<PublishOutcome>> publishing =
                        CompletableFuture.supplyAsync(() -> publisher.publish(batch));
                awaitRecords(kafka.bootstrap(), topic, 200);
                long stoppedAt = System.nanoTime();
                kafka.stopBroker();

                List<PublishOutcome> outcomes = publishing.get(30, TimeUnit.SECONDS);

                assertThat(Duration.ofNanos(System.nanoTime() - stoppedAt)).isLessThan(Duration.ofSeconds(30));
                assertThat(outcomes).noneMatch(o -> o instanceof PublishOutcome.PermanentFailure);
                assertThat(outcomes).anyMatch(PublishOutcome::isAcked);
                assertThat(outcomes).as("in flight when the broker stopped: in doubt")
                        .anyMatch(o -> o instanceof PublishOutcome.RetriableFailure);
                kafka.restartBroker();
                Set<String> ackedIds = new HashSet<>();
                for (int i = 0; i < batch.size(); i++) {
                    if (outcomes.get(i).isAcked()) {
                        ackedIds.add(batch.get(i).eventId().toString());
                    }
                }
                List<ConsumerRecord<String, byte[]>> inTopic = KafkaFixtures.readBack(kafka.bootstrap(), topic,
                        ackedIds.size() + 1, Duration.ofSeconds(20));
                assertThat(inTopic.stream().map(r -> KafkaFixtures.header(r, "event-id")).collect(Collectors.toSet()))
                        .as("every acked message is in the topic").containsAll(ackedIds);
                for (int aggregate = 0; aggregate < 8; aggregate++) {
                    int a = aggregate;
                    List<Boolean> acked = IntStream.range(0, batch.size()).filter(i -> i % 8 == a)
                            .mapToObj(i -> outcomes.get(i).isAcked()).toList();
                    int firstFailure = acked.indexOf(false);
                    if (firstFailure >= 0) {
                        assertThat(acked.subList(firstFailure, acked.size())).as("aggregate o-" + a).containsOnly(false);
                    }
                }
            }
        }
    }

    private static void awaitRecords(String bootstrap, String topic, int count) {
        try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.GROUP_ID_CONFIG, uniqueName("watcher"),
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName(),
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName()))) {
            consumer.subscribe(List.of(topic));
            int seen = 0;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (seen < count && System.nanoTime() < deadline) {
                seen += consumer.poll(Duration.ofMillis(50)).count();
            }
            assertThat(seen).as("records seen before stopping the broker").isGreaterThanOrEqualTo(count);
        }
    }
}
