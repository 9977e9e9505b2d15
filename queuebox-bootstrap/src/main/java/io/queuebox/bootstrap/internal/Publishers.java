package io.queuebox.bootstrap.internal;

import io.queuebox.bootstrap.config.ConfigException;
import io.queuebox.bootstrap.config.ConfigProblem;
import io.queuebox.bootstrap.config.Masking;
import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.MessagePublisherProvider;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;

/** Finds the broker provider named by {@code broker.type} through {@link ServiceLoader} and creates the publisher. */
public final class Publishers {

    private Publishers() {
    }

    /**
     * @throws ConfigException when no provider has that name, or the provider rejects a setting
     */
    public static MessagePublisher create(String type, Map<String, String> settings) {
        for (MessagePublisherProvider provider : ServiceLoader.load(MessagePublisherProvider.class)) {
            if (provider.name().equals(type)) {
                try {
                    return provider.create(settings);
                } catch (IllegalArgumentException e) {
                    throw new ConfigException(List.of(new ConfigProblem("broker." + type, null,
                            Masking.maskUrl(e.getMessage()))));
                }
            }
        }
        throw new ConfigException(List.of(new ConfigProblem("broker.type", type, "no broker provider of that name on the class path")));
    }
}
