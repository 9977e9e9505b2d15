package io.queuebox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.MessagePublisherProvider;
import io.queuebox.ports.OutboxEvent;
import java.util.HashMap;
import java.util.Map;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

class KafkaSettingsTest {

    private static Map<String, String> with(String... keysAndValues) {
        Map<String, String> settings = new HashMap<>(Map.of("bootstrap.servers", "127.0.0.1:1"));
        for (int i = 0; i < keysAndValues.length; i += 2) {
            settings.put(keysAndValues[i], keysAndValues[i + 1]);
        }
        return settings;
    }

    @Test
    void defaultsKeepOrderAvoidDuplicatesAndFailFast() {
        Map<String, Object> producer = KafkaSettings.fromMap(with()).producerProperties();

        assertThat(producer).containsEntry("enable.idempotence", "true").containsEntry("acks", "all")
                .containsEntry("max.in.flight.requests.per.connection", "5")
                .containsEntry("delivery.timeout.ms", "15000").containsEntry("max.block.ms", "5000")
                .containsEntry("request.timeout.ms", "5000").containsEntry("bootstrap.servers", "127.0.0.1:1");
        assertThat(KafkaSettings.fromMap(with()).publishTimeoutMs()).as("delivery.timeout.ms + 5 s").isEqualTo(20_000);
        assertThat(KafkaSettings.fromMap(with("publish.timeout.ms", "3000")).publishTimeoutMs()).isEqualTo(3_000);
    }

    @Test
    void producerPropertiesOverrideTheDefaults() {
        Map<String, Object> producer = KafkaSettings.fromMap(with("producer.linger.ms", "20",
                "producer.delivery.timeout.ms", "30000", "producer.client.id", "relay-1")).producerProperties();

        assertThat(producer).containsEntry("linger.ms", "20").containsEntry("delivery.timeout.ms", "30000")
                .containsEntry("client.id", "relay-1");
    }

    @Test
    void routingFollowsOverrideThenTemplateThenFixedTopic() {
        OutboxEvent event = OutboxEvent.of("order", "1", "Placed", new byte[0]);

        assertThat(KafkaSettings.fromMap(with()).router().topicFor(event)).isEqualTo("outbox.event.order");
        assertThat(KafkaSettings.fromMap(with("topic.template", "{aggregateType}.{eventType}")).router()
                .topicFor(event)).isEqualTo("order.Placed");
        assertThat(KafkaSettings.fromMap(with("topic", "all-events")).router().topicFor(event)).isEqualTo("all-events");
        assertThat(KafkaSettings.fromMap(with("topic", "all-events")).router()
                .topicFor(event.withDestination("special"))).isEqualTo("special");
    }

    @Test
    void badValuesNameTheKeyAndTheValue() {
        assertThatIllegalArgumentException().isThrownBy(() -> KafkaSettings.fromMap(Map.of()))
                .withMessageContaining("bootstrap.servers");
        assertThatIllegalArgumentException().isThrownBy(() -> KafkaSettings.fromMap(with("cloudevents.enabled", "yes")))
                .withMessageContaining("cloudevents.enabled").withMessageContaining("'yes'");
        assertThatIllegalArgumentException().isThrownBy(() -> KafkaSettings.fromMap(with("topic", "a b")))
                .withMessageContaining("topic").withMessageContaining("'a b'");
        assertThatIllegalArgumentException().isThrownBy(() -> KafkaSettings.fromMap(with("topic", "a",
                "topic.template", "b"))).withMessageContaining("topic.template");
        assertThatIllegalArgumentException().isThrownBy(() -> KafkaSettings.fromMap(with("topics", "a")))
                .withMessageContaining("'topics'");
        assertThatIllegalArgumentException().isThrownBy(() -> KafkaSettings.fromMap(with("producer.lingerr.ms", "1")))
                .withMessageContaining("producer.lingerr.ms");
        assertThatIllegalArgumentException().isThrownBy(() -> KafkaSettings.fromMap(with("producer.acks", "maybe")))
                .withMessageContaining("acks").withMessageContaining("maybe");
        assertThatIllegalArgumentException().isThrownBy(() -> KafkaSettings.fromMap(with("producer.linger.ms", "soon")))
                .withMessageContaining("linger.ms").withMessageContaining("soon");
        assertThatIllegalArgumentException().isThrownBy(() -> KafkaSettings.fromMap(
                with("producer.value.serializer", "x"))).withMessageContaining("producer.value.serializer");
        for (String bad : new String[] {"0", "600001", "soon", "-5"}) {
            assertThatIllegalArgumentException().isThrownBy(() -> KafkaSettings.fromMap(with("publish.timeout.ms", bad)))
                    .withMessageContaining("publish.timeout.ms").withMessageContaining("'" + bad + "'");
        }
    }

    @Test
    void secretsNeverAppearInToString() {
        KafkaSettings settings = KafkaSettings.fromMap(with("producer.sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"s3cret\";",
                "producer.ssl.key.password", "k3y-pass", "producer.ssl.truststore.password", "tru5t",
                "producer.ssl.keystore.key", "-----BEGIN PRIVATE KEY----- pr1vate"));

        assertThat(settings.toString()).doesNotContain("s3cret", "k3y-pass", "tru5t", "pr1vate").contains("sasl.jaas.config=****");
        try (MessagePublisher publisher = KafkaMessagePublisher.create(KafkaSettings.fromMap(with()))) {
            assertThat(publisher.toString()).contains("127.0.0.1:1");
        }
    }

    @Test
    void theProviderIsFoundAsKafkaThroughServiceLoader() {
        MessagePublisherProvider provider = ServiceLoader.load(MessagePublisherProvider.class).stream()
                .map(ServiceLoader.Provider::get).filter(p -> p.name().equals("kafka")).findFirst().orElseThrow();

        assertThatIllegalArgumentException().isThrownBy(() -> provider.create(Map.of("topic", "x")))
                .withMessageContaining("bootstrap.servers");
        try (MessagePublisher publisher = provider.create(with())) {
            assertThat(publisher).isInstanceOf(KafkaMessagePublisher.class);
        }
    }
}
