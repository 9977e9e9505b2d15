package io.queuebox.rabbitmq;

import io.queuebox.ports.EventTemplate;
import io.queuebox.ports.SettingNames;
import com.rabbitmq.client.ConnectionFactory;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * Settings of {@link RabbitMqMessagePublisher}, the keys under {@code broker.rabbitmq.} (see
 * {@code docs/reference/brokers.md}). Validated when built: a bad value is an
 * {@link IllegalArgumentException} naming the key. Passwords never appear in messages or {@link #toString()}.
 *
 * <ul>
 *   <li>{@code uri}: {@code amqp://[user[:password]@]host[:port]/[vhost]} or {@code amqps://...}. Default
 *       {@value #DEFAULT_URI}.</li>
 *   <li>{@code username}, {@code password}: override the URI's credentials.</li>
 *   <li>{@code exchange}: the exchange of an event without a destination override; placeholders
 *       {@code {aggregateType}}, {@code {eventType}}. Default {@value #DEFAULT_EXCHANGE}.</li>
 *   <li>{@code routing.key}: placeholders {@code {aggregateType}}, {@code {aggregateId}}, {@code {eventType}}.
 *       Default {@value #DEFAULT_ROUTING_KEY}.</li>
 *   <li>{@code mandatory}: ask the broker to return unroutable messages. Default true.</li>
 *   <li>{@code unroutable}: the outcome of a returned message, {@code permanent} (default) or
 *       {@code retriable}.</li>
 *   <li>{@code confirm.timeout.ms}: the longest one publish call takes, whatever the batch: waiting for a
 *       channel, the client's RPCs (channel open, passive declares; their timeout is set to this value) and the
 *       confirms. Default 10000.</li>
 *   <li>{@code channels}: the most channels publishing at once (publish calls beyond wait). Default 4.</li>
 *   <li>{@code connection.timeout.ms}: TCP connect and AMQP handshake timeout. Default 5000.</li>
 *   <li>{@code recovery.interval.ms}: the pause between automatic reconnection attempts. Default 2000.</li>
 *   <li>{@code heartbeat.seconds}: the AMQP heartbeat the client asks for (the broker may lower it); a
 *       connection silent for about two heartbeats is dropped and recovered. 0 asks for none. Default 10.</li>
 *   <li>{@code connection.name}: the name the broker shows for the connection. Default {@code queuebox}.</li>
 * </ul>
 */
public final class RabbitMqSettings {

    public static final String URI_KEY = "uri";
    public static final String USERNAME = "username";
    public static final String PASSWORD = "password";
    public static final String EXCHANGE = "exchange";
    public static final String ROUTING_KEY = "routing.key";
    public static final String MANDATORY = "mandatory";
    public static final String UNROUTABLE = "unroutable";
    public static final String CONFIRM_TIMEOUT_MS = "confirm.timeout.ms";
    public static final String CHANNELS = "channels";
    public static final String CONNECTION_TIMEOUT_MS = "connection.timeout.ms";
    public static final String RECOVERY_INTERVAL_MS = "recovery.interval.ms";
    public static final String HEARTBEAT_SECONDS = "heartbeat.seconds";
    public static final String CONNECTION_NAME = "connection.name";

    public static final String DEFAULT_URI = "amqp://localhost:5672/%2F";
    public static final String DEFAULT_EXCHANGE = "outbox";
    public static final String DEFAULT_ROUTING_KEY = "{aggregateType}.{eventType}";

    private static final Set<String> KNOWN = Set.of(URI_KEY, USERNAME, PASSWORD, EXCHANGE, ROUTING_KEY, MANDATORY,
            UNROUTABLE, CONFIRM_TIMEOUT_MS, CHANNELS, CONNECTION_TIMEOUT_MS, RECOVERY_INTERVAL_MS, HEARTBEAT_SECONDS, CONNECTION_NAME);
    // AMQP short strings: at most 255 bytes; exchange names of letters, digits, '-', '_', '.', ':'.
    private static final Pattern EXCHANGE_CHARS = Pattern.compile("[A-Za-z0-9._:{}-]{0,255}");

    private final String uri;
    private final String username;
    private final String password;
    private final String exchange;
    private final String routingKey;
    private final EventTemplate exchangeTemplate;
    private final EventTemplate routingKeyTemplate;
    private final boolean mandatory;
    private final boolean unroutablePermanent;
    private final long confirmTimeoutMs;
    private final int channels;
    private final int connectionTimeoutMs;
    private final long recoveryIntervalMs;
    private final int heartbeatSeconds;
    private final String connectionName;

    private RabbitMqSettings(Map<String, String> settings) {
        for (String key : settings.keySet()) {
            if (!KNOWN.contains(key)) {
                throw new IllegalArgumentException("unknown RabbitMQ setting '" + key + "'"
                        + SettingNames.suggestion(key, KNOWN) + "; known: " + new TreeSet<>(KNOWN));
            }
        }
        uri = settings.getOrDefault(URI_KEY, DEFAULT_URI);
        try {
            new ConnectionFactory().setUri(uri);
        } catch (URISyntaxException | IllegalArgumentException | java.security.GeneralSecurityException e) {
            throw new IllegalArgumentException(URI_KEY + " is not an AMQP URI (amqp://host:port/vhost), got: '"
                    + redact(uri) + "'");
        }
        username = optionalText(settings, USERNAME);
        password = settings.get(PASSWORD);
        if (password != null && password.isEmpty()) {
            throw new IllegalArgumentException(PASSWORD + " must not be empty when set");
        }
        exchange = settings.getOrDefault(EXCHANGE, DEFAULT_EXCHANGE);
        if (!EXCHANGE_CHARS.matcher(exchange).matches()) {
            throw new IllegalArgumentException(EXCHANGE + " must be at most 255 characters of letters, digits, "
                    + "'.', '_', ':', '-' and placeholders {aggregateType}, {eventType}, got: '" + exchange + "'");
        }
        routingKey = settings.getOrDefault(ROUTING_KEY, DEFAULT_ROUTING_KEY);
        if (routingKey.length() > 255) {
            throw new IllegalArgumentException(ROUTING_KEY + " must be at most 255 characters, got: '" + routingKey + "'");
        }
        exchangeTemplate = EventTemplate.parse(exchange);
        routingKeyTemplate = EventTemplate.parse(routingKey);
        mandatory = parseBoolean(settings, MANDATORY, true);
        String unroutable = settings.getOrDefault(UNROUTABLE, "permanent").trim().toLowerCase(Locale.ROOT);
        if (!unroutable.equals("permanent") && !unroutable.equals("retriable")) {
            throw new IllegalArgumentException(UNROUTABLE + " must be permanent or retriable, got: '"
                    + settings.get(UNROUTABLE) + "'");
        }
        unroutablePermanent = unroutable.equals("permanent");
        confirmTimeoutMs = parseLong(settings, CONFIRM_TIMEOUT_MS, 10_000, 1, 600_000);
        channels = (int) parseLong(settings, CHANNELS, 4, 1, 1024);
        connectionTimeoutMs = (int) parseLong(settings, CONNECTION_TIMEOUT_MS, 5_000, 1, 600_000);
        recoveryIntervalMs = parseLong(settings, RECOVERY_INTERVAL_MS, 2_000, 1, 600_000);
        heartbeatSeconds = (int) parseLong(settings, HEARTBEAT_SECONDS, 10, 0, 3_600);
        connectionName = settings.getOrDefault(CONNECTION_NAME, "queuebox");
        if (connectionName.isBlank()) {
            throw new IllegalArgumentException(CONNECTION_NAME + " must be non-blank, got: '" + connectionName + "'");
        }
    }

    /** Settings from the keys under {@code broker.rabbitmq.}, with that prefix removed. */
    public static RabbitMqSettings fromMap(Map<String, String> settings) {
        Objects.requireNonNull(settings, "settings");
        return new RabbitMqSettings(Map.copyOf(settings));
    }

    public static Builder builder() {
        return new Builder();
    }

    ConnectionFactory connectionFactory() {
        ConnectionFactory factory = new ConnectionFactory();
        try {
            factory.setUri(uri);
        } catch (Exception e) {
            throw new IllegalStateException("validated URI rejected: " + redact(uri));
        }
        if (username != null) {
            factory.setUsername(username);
        }
        if (password != null) {
            factory.setPassword(password);
        }
        factory.setConnectionTimeout(connectionTimeoutMs);
        factory.setHandshakeTimeout(connectionTimeoutMs);
        factory.setAutomaticRecoveryEnabled(true);
        // Topology is the operator's: QueueBox declares nothing, so there is nothing to re-declare.
        factory.setTopologyRecoveryEnabled(false);
        factory.setNetworkRecoveryInterval(recoveryIntervalMs);
        // A network that drops packets without closing the connection is only noticed by missed heartbeats:
        // the client's default of 60 s let a silent connection look open for about two minutes, each publish
        // call meanwhile ending at confirm.timeout.ms with its messages in doubt.
        factory.setRequestedHeartbeat(heartbeatSeconds);
        // The client waits 10 minutes for an RPC answer by default; a broker that stopped reading (an alarm)
        // would hold a publish call that long.
        factory.setChannelRpcTimeout((int) confirmTimeoutMs);
        return factory;
    }

    EventTemplate exchangeTemplate() {
        return exchangeTemplate;
    }

    EventTemplate routingKeyTemplate() {
        return routingKeyTemplate;
    }

    boolean mandatory() {
        return mandatory;
    }

    boolean unroutablePermanent() {
        return unroutablePermanent;
    }

    long confirmTimeoutMs() {
        return confirmTimeoutMs;
    }

    int channels() {
        return channels;
    }

    long recoveryIntervalMs() {
        return recoveryIntervalMs;
    }

    String connectionName() {
        return connectionName;
    }

    /** The URI without its password, for messages. */
    static String redact(String uri) {
        try {
            URI parsed = new URI(uri);
            String userInfo = parsed.getRawUserInfo();
            if (userInfo == null || !userInfo.contains(":")) {
                return uri;
            }
            return uri.replace(userInfo, userInfo.substring(0, userInfo.indexOf(':')) + ":****");
        } catch (URISyntaxException e) {
            return "<unparsable URI>";
        }
    }

    private static String optionalText(Map<String, String> settings, String key) {
        String value = settings.get(key);
        if (value != null && value.isBlank()) {
            throw new IllegalArgumentException(key + " must be non-blank when set, got: '" + value + "'");
        }
        return value;
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

    private static long parseLong(Map<String, String> settings, String key, long defaultValue, long min, long max) {
        String value = settings.get(key);
        if (value == null) {
            return defaultValue;
        }
        try {
            long parsed = Long.parseLong(value.trim());
            if (parsed >= min && parsed <= max) {
                return parsed;
            }
        } catch (NumberFormatException e) {
            // answered below
        }
        throw new IllegalArgumentException(key + " must be a whole number from " + min + " to " + max + ", got: '"
                + value + "'");
    }

    @Override
    public String toString() {
        return "RabbitMqSettings[uri=" + redact(uri) + (username != null ? ", username=" + username : "")
                + (password != null ? ", password=****" : "") + ", exchange=" + exchange + ", routing.key="
                + routingKey + ", mandatory=" + mandatory + ", unroutable="
                + (unroutablePermanent ? "permanent" : "retriable") + ", confirm.timeout.ms=" + confirmTimeoutMs
                + ", channels=" + channels + "]";
    }

    /** Builds settings in code; each method sets one key of {@link #fromMap}. */
    public static final class Builder {
        private final Map<String, String> settings = new LinkedHashMap<>();

        private Builder() {
        }

        public Builder uri(String value) {
            return set(URI_KEY, value);
        }

        public Builder exchange(String value) {
            return set(EXCHANGE, value);
        }

        public Builder routingKey(String value) {
            return set(ROUTING_KEY, value);
        }

        public Builder set(String key, String value) {
            Objects.requireNonNull(key, "key");
            if (value == null) {
                throw new IllegalArgumentException(key + " must not be null");
            }
            settings.put(key, value);
            return this;
        }

        public RabbitMqSettings build() {
            return fromMap(settings);
        }
    }
}
