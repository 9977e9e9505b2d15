package io.queuebox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.MessagePublisherProvider;
import java.util.Map;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

class RabbitMqSettingsTest {

    @Test
    void defaultsAreDocumented() {
        RabbitMqSettings settings = RabbitMqSettings.fromMap(Map.of());

        assertThat(settings.exchangeTemplate()).hasToString("outbox");
        assertThat(settings.routingKeyTemplate()).hasToString("{aggregateType}.{eventType}");
        assertThat(settings.mandatory()).isTrue();
        assertThat(settings.unroutablePermanent()).isTrue();
        assertThat(settings.confirmTimeoutMs()).isEqualTo(10_000);
        assertThat(settings.channels()).isEqualTo(4);
        assertThat(settings.connectionFactory().isAutomaticRecoveryEnabled()).isTrue();
        assertThat(settings.connectionFactory().getChannelRpcTimeout())
                .as("an RPC never outlasts the publish call (the client's own default is 10 minutes)").isEqualTo(10_000);
        assertThat(RabbitMqSettings.fromMap(Map.of("confirm.timeout.ms", "3000")).connectionFactory()
                .getChannelRpcTimeout()).isEqualTo(3_000);
    }

    @Test
    void badValuesNameTheKeyAndTheValue() {
        assertThatIllegalArgumentException().isThrownBy(() -> RabbitMqSettings.fromMap(Map.of("mandatory", "often")))
                .withMessageContaining("mandatory").withMessageContaining("'often'");
        assertThatIllegalArgumentException().isThrownBy(() -> RabbitMqSettings.fromMap(Map.of("channels", "0")))
                .withMessageContaining("channels").withMessageContaining("'0'");
        assertThatIllegalArgumentException().isThrownBy(() -> RabbitMqSettings.fromMap(
                Map.of("confirm.timeout.ms", "soon"))).withMessageContaining("confirm.timeout.ms");
        assertThatIllegalArgumentException().isThrownBy(() -> RabbitMqSettings.fromMap(Map.of("unroutable", "drop")))
                .withMessageContaining("unroutable").withMessageContaining("'drop'");
        assertThatIllegalArgumentException().isThrownBy(() -> RabbitMqSettings.fromMap(Map.of("exchange", "a b")))
                .withMessageContaining("exchange").withMessageContaining("'a b'");
        assertThatIllegalArgumentException().isThrownBy(() -> RabbitMqSettings.fromMap(Map.of("uri", "http://x")))
                .withMessageContaining("uri");
        assertThatIllegalArgumentException().isThrownBy(() -> RabbitMqSettings.fromMap(Map.of("exchnge", "x")))
                .withMessageContaining("'exchnge'");
    }

    @Test
    void passwordsNeverAppearInMessagesOrToString() {
        RabbitMqSettings settings = RabbitMqSettings.fromMap(Map.of("uri", "amqp://relay:s3cret@broker:5672/%2F",
                "password", "0ther-s3cret"));

        assertThat(settings.toString()).doesNotContain("s3cret").contains("relay:****@broker");
        assertThatIllegalArgumentException().isThrownBy(() -> RabbitMqSettings.fromMap(
                Map.of("uri", "ftp://relay:s3cret@broker/"))).withMessageNotContaining("s3cret");
    }

    @Test
    void theProviderIsFoundAsRabbitmqThroughServiceLoader() {
        MessagePublisherProvider provider = ServiceLoader.load(MessagePublisherProvider.class).stream()
                .map(ServiceLoader.Provider::get).filter(p -> p.name().equals("rabbitmq")).findFirst().orElseThrow();

        assertThatIllegalArgumentException().isThrownBy(() -> provider.create(Map.of("channels", "-1")))
                .withMessageContaining("channels");
        try (MessagePublisher publisher = provider.create(Map.of())) {
            assertThat(publisher).isInstanceOf(RabbitMqMessagePublisher.class);
        }
    }
}
