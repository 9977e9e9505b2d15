package io.queuebox.ports;

import java.util.Map;

/**
 * Creates a {@link MessagePublisher} by name, found through {@link java.util.ServiceLoader}: list the
 * implementation class in {@code META-INF/services/io.queuebox.ports.MessagePublisherProvider}, and the
 * bootstrap jar picks it when {@code broker.type} equals {@link #name()}.
 */
public interface MessagePublisherProvider {

    /** The name users put in configuration, for example {@code kafka}. Lower case, unique. */
    String name();

    /**
     * Creates a publisher from the broker settings (the keys under {@code broker.<name>.} with that prefix
     * removed).
     *
     * @throws IllegalArgumentException naming the key and value at fault when a setting is invalid
     */
    MessagePublisher create(Map<String, String> settings);
}
