package io.queuebox.kafka;

import static io.queuebox.kafka.KafkaFixtures.anEventOf;
import static io.queuebox.kafka.KafkaFixtures.deliveriesOf;
import static io.queuebox.kafka.KafkaFixtures.publisher;
import static io.queuebox.kafka.KafkaFixtures.uniqueName;
import static org.assertj.core.api.Assertions.assertThat;

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
 * A broker that is gone, or goes away mid-batch: bounded time, retriable outcomes, and (read back after the
 * broker is restarted on its data) every acked message really is in the topic.
 */
class KafkaOutageTest {

    // Shorter than the defaults so the suite stays quick; the defaults give the same shape in ~20 s.
    private static final Map<String, String> FAST_FAILING = Map.of("producer.max.block.ms", "2000",
            "producer.delivery.timeout.ms", "6000", "producer.request.timeout.ms", "2000");

    @Test
    void aClosedPortGivesRetriableFailuresWithinTheConfiguredBound() throws Exception {
        int closedPort;
        try (ServerSocket socket = new ServerSocket(0)) {
            closedPort = socket.getLocalPort();
        }
        List<OutboxEvent> events = IntStream.range(0, 10).mapToObj(i -> anEventOf("order", "o-" + (i % 3), "e" + i))
                .toList();
        try (KafkaMessagePublisher publisher = publisher("127.0.0.1:" + closedPort, Map.of(
                "producer.max.block.ms", "1000", "producer.delivery.timeout.ms", "2000",
                "producer.request.timeout.ms", "1000"))) {
            long start = System.nanoTime();

            List<PublishOutcome> outcomes = publisher.publish(deliveriesOf(events));

            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
            assertThat(outcomes).hasSize(10).allMatch(o -> o instanceof PublishOutcome.RetriableFailure);
            assertThat(((PublishOutcome.RetriableFailure) outcomes.get(0)).reason()).contains("TimeoutException");
            assertThat(publisher.health().isUp()).isFalse();
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
                assertThat(outcomes).anyMatch(o -> o instanceof PublishOutcome.RetriableFailure);
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
