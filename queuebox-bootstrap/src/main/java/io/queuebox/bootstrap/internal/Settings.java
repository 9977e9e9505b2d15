package io.queuebox.bootstrap.internal;

import io.queuebox.bootstrap.config.Keys;
import io.queuebox.bootstrap.config.QueueBoxConfig;
import io.queuebox.domain.DeliverySettings;
import io.queuebox.domain.RetryPolicy;
import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.ports.CaptureMode;
import io.queuebox.ports.CaptureSettings;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.postgres.PostgresOutboxSettings;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;

/** Translates the validated configuration into the settings objects of the domain and the PostgreSQL adapter. */
public final class Settings {

    private Settings() {
    }

    /**
     * The outbox as the relay sees it. {@code outbox.maxPayloadBytes} has no default here: only a limit the
     * operator set makes the store park larger rows at claim (the applications' writers may allow more than
     * the writer's 1 MiB default).
     */
    public static PostgresOutboxSettings outbox(QueueBoxConfig config) {
        PostgresOutboxSettings.Builder outbox = PostgresOutboxSettings.builder()
                .schema(config.string(Keys.OUTBOX_SCHEMA))
                .table(config.string(Keys.OUTBOX_TABLE))
                .deleteOnSend(config.bool(Keys.OUTBOX_DELETE_ON_SEND));
        if (config.optional(Keys.OUTBOX_MAX_PAYLOAD_BYTES).isPresent()) {
            outbox.maxPayloadBytes(config.integer(Keys.OUTBOX_MAX_PAYLOAD_BYTES));
        }
        return outbox.build();
    }

    /**
     * @param captureWakes whether a capture connector wakes delivery: then the wake interval is the
     *                     reconciliation interval, otherwise the poll interval
     */
    public static DeliverySettings delivery(QueueBoxConfig config, boolean captureWakes) {
        return DeliverySettings.builder()
                .owner(config.optional(Keys.INSTANCE_NAME).orElseGet(Settings::defaultInstanceName))
                .batchSize(config.integer(Keys.OUTBOX_BATCH_SIZE))
                .workers(config.integer(Keys.OUTBOX_WORKERS))
                .wakeInterval(config.millis(captureWakes ? Keys.CAPTURE_RECONCILIATION_INTERVAL_MS : Keys.OUTBOX_POLL_INTERVAL_MS))
                // While capture is not streaming, delivery polls as it would without capture.
                .fallbackWakeInterval(config.millis(Keys.OUTBOX_POLL_INTERVAL_MS))
                .leaseLength(config.millis(Keys.OUTBOX_LEASE_MS))
                .ordering(config.string(Keys.OUTBOX_ORDERING).equals("none") ? Ordering.NONE : Ordering.PER_AGGREGATE)
                .parkingPolicy(config.string(Keys.OUTBOX_PARKING).equals("continue-aggregate")
                        ? ParkingPolicy.CONTINUE_AGGREGATE : ParkingPolicy.HOLD_AGGREGATE)
                .retryPolicy(RetryPolicy.builder()
                        .initialDelay(config.millis(Keys.RETRY_INITIAL_MS))
                        .multiplier(config.decimal(Keys.RETRY_MULTIPLIER))
                        .maxDelay(config.millis(Keys.RETRY_MAX_MS))
                        .jitter(config.decimal(Keys.RETRY_JITTER))
                        .maxAttempts(config.integer(Keys.RETRY_MAX_ATTEMPTS))
                        .build())
                .shutdownDeadline(config.millis(Keys.SHUTDOWN_DEADLINE_MS))
                // With delete-on-send no sent row stays behind, so there is nothing to purge.
                .purgeEnabled(config.bool(Keys.PURGE_ENABLED) && !config.bool(Keys.OUTBOX_DELETE_ON_SEND))
                .purgeRetention(Duration.ofHours(config.longValue(Keys.RETENTION_SENT_HOURS)))
                .purgeInterval(config.millis(Keys.PURGE_INTERVAL_MS))
                .purgeBatchSize(config.integer(Keys.PURGE_BATCH_SIZE))
                .build();
    }

    public static CaptureMode captureMode(QueueBoxConfig config) {
        return CaptureMode.fromConfig(config.string(Keys.CAPTURE_MODE));
    }

    /**
     * Capture as configured: host, port and database come from {@code database.url} (its first host when it
     * lists several), each replaced by its {@code outbox.capture.connection.*} key when that is set.
     */
    public static CaptureSettings capture(QueueBoxConfig config) {
        JdbcLocation location = JdbcLocation.parse(config.string(Keys.DATABASE_URL));
        String host = config.optional(Keys.CAPTURE_HOST).orElse(location.host());
        int port = config.optional(Keys.CAPTURE_PORT).map(Integer::parseInt).orElse(location.port());
        String database = config.optional(Keys.CAPTURE_DATABASE).orElse(location.database());
        CaptureFingerprint fingerprint = new CaptureFingerprint(config.string(Keys.CAPTURE_SLOT),
                config.string(Keys.CAPTURE_PUBLICATION), config.string(Keys.OUTBOX_SCHEMA),
                config.string(Keys.OUTBOX_TABLE), host, database);
        return new CaptureSettings(config.bool(Keys.CAPTURE_ENABLED), captureMode(config), fingerprint, port,
                config.string(Keys.CAPTURE_STATE_DIRECTORY), config.millis(Keys.CAPTURE_RECONCILIATION_INTERVAL_MS));
    }

    /**
     * The account capture connects with: {@code outbox.capture.connection.username}/{@code password} when the
     * username is set, else {@code database.username}/{@code password}, else the {@code user=} and
     * {@code password=} of {@code database.url}.
     */
    public static Account captureAccount(QueueBoxConfig config) {
        if (config.optional(Keys.CAPTURE_USERNAME).isPresent()) {
            return new Account(config.string(Keys.CAPTURE_USERNAME), config.optional(Keys.CAPTURE_PASSWORD).orElse(""));
        }
        if (config.optional(Keys.DATABASE_USERNAME).isPresent()) {
            return new Account(config.string(Keys.DATABASE_USERNAME), config.optional(Keys.DATABASE_PASSWORD).orElse(""));
        }
        String url = config.string(Keys.DATABASE_URL);
        return new Account(urlParameter(url, "user").orElse(""),
                config.optional(Keys.DATABASE_PASSWORD).or(() -> urlParameter(url, "password")).orElse(""));
    }

    private static java.util.Optional<String> urlParameter(String url, String name) {
        int query = url.indexOf('?');
        if (query < 0) {
            return java.util.Optional.empty();
        }
        for (String pair : url.substring(query + 1).split("&")) {
            if (pair.startsWith(name + "=")) {
                return java.util.Optional.of(java.net.URLDecoder.decode(pair.substring(name.length() + 1),
                        java.nio.charset.StandardCharsets.UTF_8));
            }
        }
        return java.util.Optional.empty();
    }

    /** A database account; {@link #toString()} never shows the password. */
    public record Account(String username, String password) {
        @Override
        public String toString() {
            return "Account[" + username + "]";
        }
    }

    /** Host, port and database of a {@code jdbc:postgresql://} URL. */
    record JdbcLocation(String host, int port, String database) {

        private static final int DEFAULT_PORT = 5432;

        static JdbcLocation parse(String url) {
            String rest = url.substring("jdbc:postgresql://".length());
            int query = rest.indexOf('?');
            if (query >= 0) {
                rest = rest.substring(0, query);
            }
            int slash = rest.indexOf('/');
            String hosts = slash < 0 ? rest : rest.substring(0, slash);
            String database = slash < 0 ? "" : rest.substring(slash + 1);
            String first = hosts.split(",")[0];
            String host = first;
            int port = DEFAULT_PORT;
            if (first.startsWith("[")) {
                int close = first.indexOf(']');
                host = first.substring(1, close);
                if (first.length() > close + 2 && first.charAt(close + 1) == ':') {
                    port = Integer.parseInt(first.substring(close + 2));
                }
            } else if (first.contains(":")) {
                host = first.substring(0, first.indexOf(':'));
                port = Integer.parseInt(first.substring(first.indexOf(':') + 1));
            }
            return new JdbcLocation(host.isEmpty() ? "localhost" : host, port, database);
        }
    }

    /** Host name and process id, so an operator can tell which relay holds a lease. */
    static String defaultInstanceName() {
        String host;
        try {
            host = InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            host = "unknown-host";
        }
        return host + "-" + ProcessHandle.current().pid();
    }

    static String runtimeName() {
        return ManagementFactory.getRuntimeMXBean().getName();
    }
}
