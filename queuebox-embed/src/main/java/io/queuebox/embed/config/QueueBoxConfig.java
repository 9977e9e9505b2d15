package io.queuebox.embed.config;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The effective configuration, validated: every default filled in, secrets resolved. Immutable. Values are
 * read through the {@link Keys} constants; {@link #toString()} and {@link #describe()} mask secrets.
 */
public final class QueueBoxConfig {

    private final Map<String, ConfigValue> values;

    QueueBoxConfig(Map<String, ConfigValue> values) {
        this.values = Map.copyOf(values);
    }

    /** A configuration from plain key/values, validated like a file (for embedding and tests). */
    public static QueueBoxConfig of(Map<String, String> keyValues) {
        return new ConfigLoader().withoutFile().values(keyValues).load();
    }

    public Optional<String> optional(ConfigKey key) {
        ConfigValue value = values.get(key.name());
        return value == null || value.value().isEmpty() ? Optional.empty() : Optional.of(value.value());
    }

    public String string(ConfigKey key) {
        return optional(key).orElseThrow(() -> new IllegalStateException(key.name() + " has no value"));
    }

    public int integer(ConfigKey key) {
        return Integer.parseInt(string(key));
    }

    public long longValue(ConfigKey key) {
        return Long.parseLong(string(key));
    }

    public Duration millis(ConfigKey key) {
        return Duration.ofMillis(longValue(key));
    }

    public double decimal(ConfigKey key) {
        return Double.parseDouble(string(key));
    }

    public boolean bool(ConfigKey key) {
        return Boolean.parseBoolean(string(key));
    }

    /** The settings of the configured broker: the keys under {@code broker.<type>.} with that prefix removed. */
    public Map<String, String> brokerSettings() {
        String prefix = Keys.BROKER_PREFIX + string(Keys.BROKER_TYPE) + ".";
        Map<String, String> settings = new TreeMap<>();
        values.forEach((name, value) -> {
            if (name.startsWith(prefix)) {
                settings.put(name.substring(prefix.length()), value.value());
            }
        });
        return settings;
    }

    /** One line per key with a value, sorted by key, secrets masked: {@code key = value  (origin)}. */
    public List<String> describe() {
        List<String> lines = new ArrayList<>();
        new TreeMap<>(values).forEach((name, value) ->
                lines.add(name + " = " + Masking.forDisplay(name, value.value()) + "  (" + value.origin() + ")"));
        return lines;
    }

    @Override
    public String toString() {
        return String.join("\n", describe());
    }
}
