package io.queuebox.spring;

import io.queuebox.embed.config.ConfigKey;
import io.queuebox.embed.config.Keys;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * Renders {@code META-INF/spring-configuration-metadata.json} from {@link Keys}, so an IDE completes the
 * {@code queuebox.*} properties with the jar's documentation and defaults; ConfigurationMetadataTest fails when
 * the file drifts (regenerate it with {@link #main}).
 */
public final class ConfigurationMetadata {

    private ConfigurationMetadata() {
    }

    public static String json() {
        List<String> properties = new ArrayList<>();
        List<String> hints = new ArrayList<>();
        properties.add(property("queuebox.enabled", "java.lang.Boolean",
                "Whether the starter sets up QueueBox at all.", "true"));
        properties.add(property("queuebox.migrate", "java.lang.Boolean",
                "With Flyway on the class path: apply QueueBox's schema scripts at start.", "true"));
        for (ConfigKey key : Keys.all()) {
            if (!QueueBoxProperties.appliesToTheStarter(key)) {
                continue;
            }
            String name = "queuebox." + kebab(key.name());
            properties.add(property(name, javaType(key), key.doc(), defaultOf(key)));
            if (key.type() == ConfigKey.Type.CHOICE) {
                hints.add("    {\"name\": " + quote(name) + ", \"values\": [" + key.allowed().stream()
                        .map(value -> "{\"value\": " + quote(value) + "}").collect(Collectors.joining(", ")) + "]}");
            }
        }
        return "{\n  \"groups\": [\n    {\"name\": \"queuebox\", \"type\": \"" + QueueBoxProperties.class.getName()
                + "\", \"sourceType\": \"" + QueueBoxProperties.class.getName() + "\"}\n  ],\n  \"properties\": [\n"
                + String.join(",\n", properties) + "\n  ],\n  \"hints\": [\n" + String.join(",\n", hints) + "\n  ]\n}\n";
    }

    private static String property(String name, String type, String description, String defaultValue) {
        return "    {\"name\": " + quote(name) + ", \"type\": " + quote(type) + ", \"sourceType\": "
                + quote(QueueBoxProperties.class.getName()) + ", \"description\": " + quote(description)
                + (defaultValue == null ? "" : ", \"defaultValue\": " + defaultValue) + "}";
    }

    private static String javaType(ConfigKey key) {
        return switch (key.type()) {
            case INTEGER -> key.max() > Integer.MAX_VALUE ? "java.lang.Long" : "java.lang.Integer";
            case MILLIS -> "java.lang.Long";
            case DECIMAL -> "java.lang.Double";
            case BOOLEAN -> "java.lang.Boolean";
            default -> "java.lang.String";
        };
    }

    /** The default as a JSON value; none for a key whose default depends on the database. */
    private static String defaultOf(ConfigKey key) {
        if (key.databaseDefault() || key.defaultValue() == null) {
            return null;
        }
        return switch (key.type()) {
            case INTEGER, MILLIS, DECIMAL, BOOLEAN -> key.defaultValue();
            default -> quote(key.defaultValue());
        };
    }

    /** {@code outbox.pollIntervalMs} as Spring writes it: {@code outbox.poll-interval-ms}. */
    static String kebab(String name) {
        return name.replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase(Locale.ROOT);
    }

    private static String quote(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }

    public static void main(String[] args) {
        System.out.print(json());
    }
}
