package io.queuebox.embed.internal;

import io.queuebox.embed.config.ConfigException;
import io.queuebox.embed.config.ConfigProblem;
import io.queuebox.embed.config.Masking;
import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.MessagePublisherProvider;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;

/** Finds the broker provider named by {@code broker.type} through {@link ServiceLoader} and creates the publisher. */
public final class Publishers {

    private Publishers() {
    }

    /**
     * @throws ConfigException when no provider has that name, or the provider rejects a setting
     */
    public static MessagePublisher create(String type, Map<String, String> settings) {
        MessagePublisherProvider provider = provider(type);
        try {
            return provider.create(settings);
        } catch (IllegalArgumentException e) {
            throw new ConfigException(List.of(problem(type, settings, e)));
        }
    }

    /**
     * What the provider would refuse in {@link #create}, found without connecting to the broker: the check
     * {@code config check} shares with {@code run}.
     *
     * @throws ConfigException when no provider has that name
     */
    public static List<ConfigProblem> problems(String type, Map<String, String> settings) {
        try {
            provider(type).validate(settings);
            return List.of();
        } catch (IllegalArgumentException e) {
            return List.of(problem(type, settings, e));
        }
    }

    private static MessagePublisherProvider provider(String type) {
        for (MessagePublisherProvider provider : ServiceLoader.load(MessagePublisherProvider.class)) {
            if (provider.name().equals(type)) {
                return provider;
            }
        }
        throw new ConfigException(List.of(new ConfigProblem("broker.type", type, "no broker provider of that name on the class path")));
    }

    /**
     * The provider's message under the full key it names ({@code broker.<type>.<setting>}), so the problem
     * reads like every other configuration problem; under {@code broker.<type>} when it names none.
     */
    private static ConfigProblem problem(String type, Map<String, String> settings, IllegalArgumentException e) {
        String message = Masking.maskUrl(String.valueOf(e.getMessage()));
        String prefix = "broker." + type + ".";
        Optional<String> named = settings.keySet().stream()
                .filter(key -> message.startsWith(key + " ") || message.contains("'" + key + "'"))
                .max(Comparator.comparingInt(String::length));
        return named.map(key -> new ConfigProblem(prefix + key, Masking.forDisplay(prefix + key, settings.get(key)), message))
                .orElseGet(() -> new ConfigProblem("broker." + type, null, message));
    }
}
