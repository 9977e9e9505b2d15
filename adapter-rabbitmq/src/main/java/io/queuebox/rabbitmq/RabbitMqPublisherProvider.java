package io.queuebox.rabbitmq;

import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.MessagePublisherProvider;
import java.util.Map;

/** {@code broker.type: rabbitmq}: creates a {@link RabbitMqMessagePublisher} from {@link RabbitMqSettings}' keys. */
public final class RabbitMqPublisherProvider implements MessagePublisherProvider {

    @Override
    public String name() {
        return "rabbitmq";
    }

    @Override
    public MessagePublisher create(Map<String, String> settings) {
        return RabbitMqMessagePublisher.create(RabbitMqSettings.fromMap(settings));
    }

    /** Builds the settings only: that is where every key is checked, and it opens no connection. */
    @Override
    public void validate(Map<String, String> settings) {
        RabbitMqSettings.fromMap(settings);
    }
}
