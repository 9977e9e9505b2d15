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

    /**
     * Checks the settings as {@link #create} does, without connecting to the broker or starting anything:
     * {@code queuebox config check} calls it so that it refuses what {@code run} would refuse. The default
     * checks nothing; a provider whose {@code create} validates should validate here the same way.
     *
     * @throws IllegalArgumentException naming the key and value at fault when a setting is invalid
     */
    default void validate(Map<String, String> settings) {
    }
}
