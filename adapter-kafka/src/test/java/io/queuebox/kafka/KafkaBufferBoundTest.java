package io.queuebox.kafka;

import static io.queuebox.kafka.KafkaFixtures.deliveriesOf;
import static io.queuebox.kafka.KafkaFixtures.reasonOf;
import static io.queuebox.kafka.KafkaFixtures.publisher;
import static io.queuebox.kafka.KafkaFixtures.uniqueName;
import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.kafka.testing.InProcessKafka;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A producer whose buffer is full: {@code send} blocks the calling thread for buffer space (up to
 * {@code max.block.ms}), then throws. The call must still end within {@code publish.timeout.ms}, and a record
 * the producer never took must be answered "not attempted", not charged.
 *
 * <p>The buffer fills because a client quota throttles the broker to 50 kB/s while each call offers 20 x 300 kB
 * against a 1 MiB buffer. A dedicated broker, so the quota touches no other test.
 */
class KafkaBufferBoundTest {

    private static final long PUBLISH_TIMEOUT_MS = 2000;
    private static final int PAYLOAD = 300_000;

    private static InProcessKafka kafka;

    @BeforeAll
    static void throttledBroker() throws Exception {
        kafka = InProcessKafka.startDedicated();
        try (Admin admin = Admin.create(Map.<String, Object>of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG,
                kafka.bootstrap()))) {
            // Default quota for every client id: the broker takes 50 kB/s, so sends queue up in the producer.
            admin.alterClientQuotas(List.of(new ClientQuotaAlteration(
                    new ClientQuotaEntity(Collections.singletonMap(ClientQuotaEntity.CLIENT_ID, null)),
                    List.of(new ClientQuotaAlteration.Op("producer_byte_rate", 50_000.0))))).all().get();
        }
    }

    @AfterAll
    static void stopBroker() {
        if (kafka != null) {
            kafka.close();
        }
    }

    @Test
    void everyCallEndsWithinPublishTimeoutWhileSendsWaitForBufferSpace() {
        String topic = uniqueName("full-buffer");
        try (KafkaMessagePublisher publisher = fullBufferPublisher(topic)) {
            for (int call = 0; call < 3; call++) {
                long start = System.nanoTime();

                List<PublishOutcome> outcomes = publisher.publish(deliveriesOf(bigEvents("c" + call + "-", topic, 20)));

                long took = Duration.ofNanos(System.nanoTime() - start).toMillis();
                System.out.printf("full buffer, call %d: %d ms (publish.timeout.ms %d): %s%n", call, took,
                        PUBLISH_TIMEOUT_MS, summary(outcomes));
                assertThat(took).as("call %d took %d ms", call, took).isLessThan(PUBLISH_TIMEOUT_MS + 500);
            }
        }
    }

    @Test
    void aRecordWhoseSendFoundNoBufferSpaceIsNotAttempted() {
        String topic = uniqueName("full-buffer");
        try (KafkaMessagePublisher publisher = fullBufferPublisher(topic)) {
            boolean sawExhaustion = false;
            for (int call = 0; call < 3 && !sawExhaustion; call++) {
                List<PublishOutcome> outcomes = publisher.publish(deliveriesOf(bigEvents("c" + call + "-", topic, 20)));
                System.out.println("full buffer, call " + call + ": " + summary(outcomes));
                // The producer throws BufferExhaustedException from send: the record was never appended.
                assertThat(outcomes).filteredOn(o -> o instanceof PublishOutcome.RetriableFailure)
                        .noneMatch(o -> ((PublishOutcome.RetriableFailure) o).reason().contains("BufferExhausted"));
                sawExhaustion = outcomes.stream().anyMatch(o -> o instanceof PublishOutcome.NotAttempted n
                        && n.reason().contains("BufferExhaustedException"));
            }
            assertThat(sawExhaustion).as("some record was answered not attempted for want of buffer space").isTrue();
        }
    }

    private static KafkaMessagePublisher fullBufferPublisher(String topic) {
        KafkaMessagePublisher publisher = publisher(kafka.bootstrap(), Map.of(
                "publish.timeout.ms", String.valueOf(PUBLISH_TIMEOUT_MS), "producer.buffer.memory", "1048576"));
        // Topic created and metadata cached before the buffer fills.
        assertThat(publisher.publish(deliveriesOf(bigEvents("warm-", topic, 1)))).allMatch(
                o -> o instanceof PublishOutcome.Acked);
        return publisher;
    }

    private static List<OutboxEvent> bigEvents(String prefix, String topic, int aggregates) {
        return IntStream.range(0, aggregates).mapToObj(i -> OutboxEvent.of("order", prefix + i, "Changed",
                new byte[i == 0 && aggregates == 1 ? 10 : PAYLOAD]).withDestination(topic)).toList();
    }

    private static String summary(List<PublishOutcome> outcomes) {
        return outcomes.stream().map(o -> o.getClass().getSimpleName() + (o instanceof PublishOutcome.Acked ? ""
                : "(" + reasonOf(o) + ")")).distinct().toList().toString();
    }
}
