package io.queuebox.kafka;

import io.queuebox.ports.SettingNames;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Settings of {@link KafkaMessagePublisher}, the keys under {@code broker.kafka.} (see
 * {@code docs/reference/brokers.md}). Validated when built: a bad value is an
 * {@link IllegalArgumentException} that names the key.
 *
 * <ul>
 *   <li>{@code bootstrap.servers} (required): the brokers to contact first, {@code host:port,...}.</li>
 *   <li>{@code topic.template}: the topic of an event without a destination override; placeholders
 *       {@code {aggregateType}} and {@code {eventType}}. Default {@value #DEFAULT_TOPIC_TEMPLATE}.</li>
 *   <li>{@code topic}: one fixed topic for every event without a destination override; excludes
 *       {@code topic.template}.</li>
 *   <li>{@code cloudevents.enabled}: add CloudEvents binary-mode headers ({@code ce_*}). Default false.</li>
 *   <li>{@code cloudevents.source}: the {@code ce_source} value. Default {@value #DEFAULT_CE_SOURCE}.</li>
 *   <li>{@code publish.timeout.ms}: the longest one publish call takes, whatever the batch (waiting for topic
 *       metadata, sending, waiting for acks), 1 to 600000. Default {@value #DEFAULT_PUBLISH_TIMEOUT_MS}: the
 *       default {@code delivery.timeout.ms} plus 5 s, so that the producer's own retries end first. The
 *       producer's {@code max.block.ms} is capped at a quarter of it (see {@link #maxBlockMs()}).</li>
 *   <li>{@code producer.<property>}: any Kafka producer property, overriding QueueBox's defaults
 *       ({@link #PRODUCER_DEFAULTS}). The serializers are fixed.</li>
 * </ul>
 */
public final class KafkaSettings {

    public static final String BOOTSTRAP_SERVERS = "bootstrap.servers";
    public static final String TOPIC_TEMPLATE = "topic.template";
    public static final String TOPIC = "topic";
    public static final String CLOUDEVENTS_ENABLED = "cloudevents.enabled";
    public static final String CLOUDEVENTS_SOURCE = "cloudevents.source";
    public static final String PUBLISH_TIMEOUT_MS = "publish.timeout.ms";
    public static final String PRODUCER_PREFIX = "producer.";

    public static final String DEFAULT_TOPIC_TEMPLATE = "outbox.event.{aggregateType}";
    public static final String DEFAULT_CE_SOURCE = "/queuebox";
    public static final long DEFAULT_PUBLISH_TIMEOUT_MS = 20_000;

    /**
     * Producer defaults: idempotent, acknowledged by all in-sync replicas, at most five requests in flight
     * (order kept on retry), and a dead broker answered within about 20 s (max.block 5 s for metadata,
     * delivery timeout 15 s per record). No lingering: sends of one aggregate wait for the previous ack.
     */
    public static final Map<String, String> PRODUCER_DEFAULTS = Map.of(
            ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true",
            ProducerConfig.ACKS_CONFIG, "all",
            ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5",
            ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "15000",
            ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000",
            ProducerConfig.MAX_BLOCK_MS_CONFIG, "5000",
            ProducerConfig.LINGER_MS_CONFIG, "0");

    private static final Set<String> KNOWN = Set.of(BOOTSTRAP_SERVERS, TOPIC_TEMPLATE, TOPIC, CLOUDEVENTS_ENABLED,
            CLOUDEVENTS_SOURCE, PUBLISH_TIMEOUT_MS);
    private static final Set<String> FIXED_PRODUCER = Set.of(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG,
            ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ProducerConfig.BOOTSTRAP_SERVERS_CONFIG);
    private static final Pattern SECRET = Pattern.compile("password|secret|jaas|token|credential|\\.key$");
    private static final Pattern TOPIC_CHARS = Pattern.compile("[A-Za-z0-9._{}-]{1,249}");

    private final String bootstrapServers;
    private final TopicRouter router;
    private final boolean cloudEvents;
    private final String cloudEventsSource;
    private final long publishTimeoutMs;
    private final Map<String, Object> producerProperties;
    private final long maxBlockMs;
    private final long metadataWaitMs;

    /** The producer's {@code max.block.ms} is at most this part of {@code publish.timeout.ms}. */
    static final long MAX_BLOCK_FRACTION = 4;

    private KafkaSettings(Map<String, String> settings) {
        for (String key : settings.keySet()) {
            if (!KNOWN.contains(key) && !key.startsWith(PRODUCER_PREFIX)) {
                throw new IllegalArgumentException("unknown Kafka setting '" + key + "'"
                        + SettingNames.suggestion(key, KNOWN) + "; known: " + new java.util.TreeSet<>(KNOWN)
                        + " and producer.*");
            }
        }
        bootstrapServers = settings.get(BOOTSTRAP_SERVERS);
        if (bootstrapServers == null || bootstrapServers.isBlank()) {
            throw new IllegalArgumentException(BOOTSTRAP_SERVERS + " is required (host:port[,host:port...]), got: "
                    + bootstrapServers);
        }
        String template = settings.get(TOPIC_TEMPLATE);
        String topic = settings.get(TOPIC);
        if (template != null && topic != null) {
            throw new IllegalArgumentException("set either " + TOPIC + " or " + TOPIC_TEMPLATE + ", not both (got '"
                    + topic + "' and '" + template + "')");
        }
        String route = topic != null ? topic : template != null ? template : DEFAULT_TOPIC_TEMPLATE;
        String routeKey = topic != null ? TOPIC : TOPIC_TEMPLATE;
        if (!TOPIC_CHARS.matcher(route).matches() || (topic != null && route.contains("{"))) {
            throw new IllegalArgumentException(routeKey + " must be 1-249 characters of letters, digits, '.', '_', '-'"
                    + (topic == null ? " and placeholders {aggregateType}, {eventType}" : "") + ", got: '" + route + "'");
        }
        router = TopicRouter.of(routeKey, route);
        cloudEvents = parseBoolean(settings, CLOUDEVENTS_ENABLED, false);
        cloudEventsSource = settings.getOrDefault(CLOUDEVENTS_SOURCE, DEFAULT_CE_SOURCE);
        if (cloudEventsSource.isBlank()) {
            throw new IllegalArgumentException(CLOUDEVENTS_SOURCE + " must be non-blank, got: '" + cloudEventsSource + "'");
        }
        publishTimeoutMs = parseMillis(settings, PUBLISH_TIMEOUT_MS, DEFAULT_PUBLISH_TIMEOUT_MS);
        Map<String, Object> properties = producerProperties(settings);
        metadataWaitMs = Long.parseLong((String) properties.get(ProducerConfig.MAX_BLOCK_MS_CONFIG));
        // send blocks the calling thread up to max.block.ms (buffer space); the call starts no send with less than
        // that left, so it must be a fraction of the call's bound or little would ever be sent. Metadata keeps the
        // configured wait: TopicLookups repeats the shorter one off the calling thread.
        maxBlockMs = Math.min(metadataWaitMs, publishTimeoutMs / MAX_BLOCK_FRACTION);
        properties = new LinkedHashMap<>(properties);
        properties.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, String.valueOf(maxBlockMs));
        producerProperties = Map.copyOf(properties);
    }

    /** Settings from the keys under {@code broker.kafka.}, with that prefix removed. */
    public static KafkaSettings fromMap(Map<String, String> settings) {
        Objects.requireNonNull(settings, "settings");
        return new KafkaSettings(Map.copyOf(settings));
    }

    public static Builder builder() {
        return new Builder();
    }

    String bootstrapServers() {
        return bootstrapServers;
    }

    TopicRouter router() {
        return router;
    }

    boolean cloudEvents() {
        return cloudEvents;
    }

    String cloudEventsSource() {
        return cloudEventsSource;
    }

    /** The complete producer configuration: defaults, then overrides, then the fixed entries. */
    Map<String, Object> producerProperties() {
        return producerProperties;
    }

    /** The bound on one publish call. */
    long publishTimeoutMs() {
        return publishTimeoutMs;
    }

    /** The producer's {@code max.block.ms}: the configured one, at most a quarter of {@code publish.timeout.ms}. */
    long maxBlockMs() {
        return maxBlockMs;
    }

    /** How long a topic's metadata is waited for: the configured {@code max.block.ms}, uncapped. */
    long metadataWaitMs() {
        return metadataWaitMs;
    }

    int requestTimeoutMs() {
        return new ProducerConfig(producerProperties).getInt(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG);
    }

    private static Map<String, Object> producerProperties(Map<String, String> settings) {
        Map<String, Object> properties = new LinkedHashMap<>(PRODUCER_DEFAULTS);
        Set<String> allowed = ProducerConfig.configNames();
        for (Map.Entry<String, String> entry : settings.entrySet()) {
            if (!entry.getKey().startsWith(PRODUCER_PREFIX)) {
                continue;
            }
            String property = entry.getKey().substring(PRODUCER_PREFIX.length());
            if (FIXED_PRODUCER.contains(property)) {
                throw new IllegalArgumentException(entry.getKey() + " cannot be set: "
                        + (property.equals(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG)
                        ? "use " + BOOTSTRAP_SERVERS : "QueueBox sends keys as strings and payloads as bytes"));
            }
            if (!allowed.contains(property)) {
                String closest = SettingNames.closest(property, allowed);
                throw new IllegalArgumentException("unknown Kafka producer property in '" + entry.getKey() + "'"
                        + (closest == null ? "" : "; did you mean '" + PRODUCER_PREFIX + closest + "'?"));
            }
            properties.put(property, entry.getValue());
        }
        properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, settings.get(BOOTSTRAP_SERVERS));
        properties.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        properties.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        try {
            // Parses and checks every value (types, ranges, idempotence needs acks=all) before any connection.
            new ProducerConfig(properties);
        } catch (ConfigException e) {
            throw new IllegalArgumentException("invalid Kafka producer setting (keys are under '" + PRODUCER_PREFIX
                    + "'): " + e.getMessage(), e);
        }
        for (String timeout : new String[] {ProducerConfig.MAX_BLOCK_MS_CONFIG, ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG}) {
            long value = Long.parseLong(String.valueOf(properties.get(timeout)).trim());
            if (value < 0 || (value == 0 && timeout.equals(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG))) {
                throw new IllegalArgumentException(PRODUCER_PREFIX + timeout + " must be "
                        + (value < 0 ? ">= 0" : "> 0") + ", got: " + value);
            }
            properties.put(timeout, String.valueOf(value));
        }
        return Map.copyOf(properties);
    }

    private static long parseMillis(Map<String, String> settings, String key, long defaultValue) {
        String value = settings.get(key);
        if (value == null) {
            return defaultValue;
        }
        try {
            long parsed = Long.parseLong(value.trim());
            if (parsed >= 1 && parsed <= 600_000) {
                return parsed;
            }
        } catch (NumberFormatException e) {
            // answered below
        }
        throw new IllegalArgumentException(key + " must be a whole number of milliseconds from 1 to 600000, got: '"
                + value + "'");
    }

    private static boolean parseBoolean(Map<String, String> settings, String key, boolean defaultValue) {
        String value = settings.get(key);
        if (value == null) {
            return defaultValue;
        }
        return switch (value.trim().toLowerCase(Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalArgumentException(key + " must be true or false, got: '" + value + "'");
        };
    }

    static boolean isSecret(String key) {
        return SECRET.matcher(key.toLowerCase(Locale.ROOT)).find();
    }

    @Override
    public String toString() {
        Map<String, Object> shown = new TreeMap<>();
        producerProperties.forEach((k, v) -> shown.put(k, isSecret(k) ? "****" : v));
        return "KafkaSettings[bootstrap.servers=" + bootstrapServers + ", route=" + router
                + ", cloudevents=" + cloudEvents + (cloudEvents ? " source=" + cloudEventsSource : "")
                + ", publish.timeout.ms=" + publishTimeoutMs + ", producer=" + shown + "]";
    }

    /** Builds settings in code; each method sets one key of {@link #fromMap}. */
    public static final class Builder {
        private final Map<String, String> settings = new LinkedHashMap<>();

        private Builder() {
        }

        public Builder bootstrapServers(String value) {
            return set(BOOTSTRAP_SERVERS, value);
        }

        public Builder topicTemplate(String value) {
            return set(TOPIC_TEMPLATE, value);
        }

        public Builder topic(String value) {
            return set(TOPIC, value);
        }

        public Builder cloudEvents(boolean enabled) {
            return set(CLOUDEVENTS_ENABLED, String.valueOf(enabled));
        }

        public Builder cloudEventsSource(String value) {
            return set(CLOUDEVENTS_SOURCE, value);
        }

        public Builder publishTimeoutMs(long value) {
            return set(PUBLISH_TIMEOUT_MS, String.valueOf(value));
        }

        /** A Kafka producer property without the {@code producer.} prefix, e.g. {@code linger.ms}. */
        public Builder producerProperty(String property, String value) {
            return set(PRODUCER_PREFIX + property, value);
        }

        public Builder set(String key, String value) {
            Objects.requireNonNull(key, "key");
            if (value == null) {
                throw new IllegalArgumentException(key + " must not be null");
            }
            settings.put(key, value);
            return this;
        }

        public KafkaSettings build() {
            return fromMap(settings);
        }
    }
}
