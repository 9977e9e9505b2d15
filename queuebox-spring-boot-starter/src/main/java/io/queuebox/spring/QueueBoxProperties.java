package io.queuebox.spring;

import io.queuebox.embed.config.ConfigException;
import io.queuebox.embed.config.ConfigKey;
import io.queuebox.embed.config.ConfigLoader;
import io.queuebox.embed.config.ConfigProblem;
import io.queuebox.embed.config.Keys;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.ports.MessagePublisherProvider;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeSet;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code queuebox.*} properties: every key of the jar ({@link Keys}, docs/reference/configuration.md) under
 * the prefix {@code queuebox.}, in any of Spring's relaxed forms ({@code queuebox.outbox.batch-size},
 * {@code queuebox.outbox.batchSize}, {@code QUEUEBOX_OUTBOX_BATCHSIZE}), with the jar's defaults and
 * validation: {@link #toConfig} hands them to the same {@link ConfigLoader} the jar uses. Broker settings
 * ({@code queuebox.broker.kafka.bootstrap.servers}) go to the broker provider unchanged.
 *
 * <p>Bound as a map rather than as typed fields, so the keys, their defaults and their checks exist once, in
 * {@link Keys}. Two properties are the starter's own: {@code queuebox.enabled} (default true) and
 * {@code queuebox.migrate} (default true: apply QueueBox's Flyway scripts at start when Flyway is present).
 */
@ConfigurationProperties(prefix = "queuebox")
public class QueueBoxProperties extends LinkedHashMap<String, String> {

    private static final long serialVersionUID = 1L;

    /** The starter's own properties, not keys of the jar. */
    static final Set<String> STARTER_PROPERTIES = Set.of("enabled", "migrate");

    private static final String CAPTURE_PREFIX = "outbox.capture.";

    /**
     * Keys of the jar that have no meaning inside an application, each with what to use instead. A key set here
     * is refused rather than ignored: whoever set it expects it to do something.
     */
    private static final Map<String, String> JAR_ONLY = jarOnly();

    private static Map<String, String> jarOnly() {
        Map<String, String> keys = new LinkedHashMap<>();
        String datasource = "the starter delivers from the application's DataSource: configure it with spring.datasource.*";
        for (ConfigKey key : List.of(Keys.DATABASE_URL, Keys.DATABASE_USERNAME, Keys.DATABASE_PASSWORD,
                Keys.DATABASE_PASSWORD_FILE, Keys.DATABASE_POOL_MAX_SIZE, Keys.DATABASE_POOL_CONNECTION_TIMEOUT_MS,
                Keys.DATABASE_SOCKET_TIMEOUT_MS, Keys.STARTUP_DATABASE_WAIT_MS)) {
            keys.put(key.name(), datasource);
        }
        keys.put(Keys.HTTP_PORT.name(), "health and metrics are Actuator's: configure management.*");
        keys.put(Keys.HTTP_HOST.name(), "health and metrics are Actuator's: configure management.*");
        keys.put(Keys.LOG_FORMAT.name(), "logging is the application's: configure logging.*");
        // The console is served by the runnable jar's own HTTP server, which an application does not run.
        for (ConfigKey key : List.of(Keys.CONSOLE_ENABLED, Keys.CONSOLE_ALLOW_REMOTE, Keys.CONSOLE_ALLOWED_HOSTS,
                Keys.CONSOLE_ADMIN_TOKEN,
                Keys.CONSOLE_READ_REQUIRES_TOKEN, Keys.CONSOLE_READ_TOKEN, Keys.CONSOLE_SAMPLE_INTERVAL_MS)) {
            keys.put(key.name(), "the operator console is the runnable jar's (queuebox.jar), not the starter's");
        }
        keys.put(Keys.LOG_LEVEL.name(), "logging is the application's: logging.level.io.queuebox");
        return Map.copyOf(keys);
    }

    /** Whether the key means something inside an application (the jar-only and capture keys do not). */
    static boolean appliesToTheStarter(ConfigKey key) {
        return !JAR_ONLY.containsKey(key.name()) && !key.name().startsWith(CAPTURE_PREFIX);
    }

    /**
     * The validated configuration, as the jar would load it from the same keys, with {@code database.url} taken
     * from the application's data source.
     *
     * @throws ConfigException listing every problem, each under its {@code queuebox.} name
     */
    public QueueBoxConfig toConfig(String dataSourceUrl) {
        Map<String, String> values = new LinkedHashMap<>();
        List<ConfigProblem> problems = new ArrayList<>();
        forEach((name, value) -> {
            if (STARTER_PROPERTIES.contains(name)) {
                return;
            }
            String key = keyName(name);
            String instead = JAR_ONLY.get(key);
            if (instead != null) {
                problems.add(new ConfigProblem("queuebox." + key, Keys.isSecret(key) ? "****" : value,
                        "not used by the Spring Boot starter; " + instead));
            } else if (key.startsWith(CAPTURE_PREFIX) && !isDisabledCapture(key, value)) {
                problems.add(new ConfigProblem("queuebox." + key, value, "capture runs in queuebox.jar, not in the"
                        + " starter (which wakes delivery after each commit of TransactionalOutboxWriter); remove the key"));
            } else if (key.equals(Keys.WAKE_MODE.name()) && !value.trim().equals("poll")) {
                problems.add(new ConfigProblem("queuebox." + key, value, "the starter wakes delivery after each"
                        + " commit of TransactionalOutboxWriter; insert notifications are queuebox.jar's; allowed: poll"));
            } else {
                values.put(key, value);
            }
        });
        if (!problems.isEmpty()) {
            throw new ConfigException(problems);
        }
        values.put(Keys.DATABASE_URL.name(), dataSourceUrl);
        try {
            return new ConfigLoader().withoutFile().values(values).brokerNames(brokerNames()).load();
        } catch (ConfigException e) {
            throw new ConfigException(e.problems().stream()
                    .map(p -> new ConfigProblem(p.key().startsWith("queuebox.") ? p.key() : "queuebox." + p.key(),
                            p.value(), p.problem()))
                    .toList());
        }
    }

    private static boolean isDisabledCapture(String key, String value) {
        return key.equals(Keys.CAPTURE_ENABLED.name()) && value.trim().equals("false");
    }

    /**
     * The jar's name of a property as Spring bound it: a fixed key in whatever relaxed form
     * ({@code outbox.batch-size}, {@code outbox.batchsize} from {@code QUEUEBOX_OUTBOX_BATCHSIZE}), or a broker
     * setting unchanged; anything else as given, for the validator to refuse with the closest key.
     */
    static String keyName(String name) {
        Optional<ConfigKey> fixed = Keys.all().stream()
                .filter(key -> canonical(key.name()).equals(canonical(name)))
                .findFirst();
        return fixed.map(ConfigKey::name).orElse(name);
    }

    private static String canonical(String name) {
        return name.toLowerCase(Locale.ROOT).replace("-", "").replace("_", "").replace(".", "");
    }

    private static Set<String> brokerNames() {
        Set<String> names = new TreeSet<>();
        ServiceLoader.load(MessagePublisherProvider.class).forEach(provider -> names.add(provider.name()));
        return names;
    }
}
