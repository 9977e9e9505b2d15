package io.queuebox.kafka;

import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.MessagePublisherProvider;
import java.util.Map;

/** {@code broker.type: kafka}: creates a {@link KafkaMessagePublisher} from {@link KafkaSettings}' keys. */
public final class KafkaPublisherProvider implements MessagePublisherProvider {

    @Override
    public String name() {
        return "kafka";
    }

    @Override
    public MessagePublisher create(Map<String, String> settings) {
        return KafkaMessagePublisher.create(KafkaSettings.fromMap(settings));
    }

    /** Builds the settings only: that is where every key is checked, and it opens no connection. */
    @Override
    public void validate(Map<String, String> settings) {
        KafkaSettings.fromMap(settings);
    }
}
