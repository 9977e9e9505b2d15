package io.queuebox.embed.internal;

import io.queuebox.embed.config.Keys;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.domain.DeliverySettings;
import io.queuebox.domain.RetryPolicy;
import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.ports.CaptureMode;
import io.queuebox.ports.CaptureSettings;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.embed.config.Databases;
import io.queuebox.jdbc.DatabaseLocation;
import io.queuebox.jdbc.DatabaseProvider;
import io.queuebox.jdbc.OutboxTable;
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
    public static OutboxTable outbox(QueueBoxConfig config) {
        return Databases.outboxTable(config);
    }

    /** What wakes delivery between its intervals, and so which key is its wake interval. */
    public enum Wakes {
        /** Nothing: delivery polls every {@code outbox.pollIntervalMs}. */
        POLL,
        /** Notifications of inserts ({@code outbox.wake.mode: notify}): {@code outbox.wake.reconciliationIntervalMs}. */
        NOTIFY,
        /** A capture connector: {@code outbox.capture.reconciliationIntervalMs}. */
        CAPTURE
    }

    /**
     * @param captureWakes whether a capture connector wakes delivery: then the wake interval is the
     *                     reconciliation interval, otherwise the poll interval
     */
    public static DeliverySettings delivery(QueueBoxConfig config, boolean captureWakes) {
        return delivery(config, captureWakes ? Wakes.CAPTURE : Wakes.POLL);
    }

    /**
     * The delivery settings. The wake interval is the poll interval when nothing else wakes delivery, else the
     * reconciliation interval of what does (capture, notifications); the fallback interval, used while that
     * source is not up, is always the poll interval, so a failed source slows delivery to polling and no further.
     */
    public static DeliverySettings delivery(QueueBoxConfig config, Wakes wakes) {
        return DeliverySettings.builder()
                .owner(config.optional(Keys.INSTANCE_NAME).orElseGet(Settings::defaultInstanceName))
                .batchSize(config.integer(Keys.OUTBOX_BATCH_SIZE))
                .workers(config.integer(Keys.OUTBOX_WORKERS))
                .pipelineDepth(config.integer(Keys.OUTBOX_PIPELINE_DEPTH))
                .wakeInterval(config.millis(switch (wakes) {
                    case POLL -> Keys.OUTBOX_POLL_INTERVAL_MS;
                    case NOTIFY -> Keys.WAKE_RECONCILIATION_INTERVAL_MS;
                    case CAPTURE -> Keys.CAPTURE_RECONCILIATION_INTERVAL_MS;
                }))
                // While capture or the insert listener is down, delivery polls as it would without them.
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
     * lists several), each replaced by its {@code outbox.capture.connection.*} key when that is set. Slot and
     * publication are PostgreSQL's; on other databases the fingerprint holds them empty.
     */
    public static CaptureSettings capture(QueueBoxConfig config) {
        DatabaseLocation location = captureLocation(config);
        CaptureFingerprint fingerprint = new CaptureFingerprint(config.optional(Keys.CAPTURE_SLOT).orElse(""),
                config.optional(Keys.CAPTURE_PUBLICATION).orElse(""), config.string(Keys.OUTBOX_SCHEMA),
                config.string(Keys.OUTBOX_TABLE), location.host(), location.database());
        return new CaptureSettings(config.bool(Keys.CAPTURE_ENABLED), captureMode(config), fingerprint,
                location.port(), config.string(Keys.CAPTURE_STATE_DIRECTORY),
                config.millis(Keys.CAPTURE_RECONCILIATION_INTERVAL_MS));
    }

    /** Where capture connects: {@code database.url}'s location with the {@code outbox.capture.connection.*} overrides. */
    static DatabaseLocation captureLocation(QueueBoxConfig config) {
        DatabaseLocation location = Databases.of(config).locate(config.string(Keys.DATABASE_URL));
        return new DatabaseLocation(config.optional(Keys.CAPTURE_HOST).orElse(location.host()),
                config.optional(Keys.CAPTURE_PORT).map(Integer::parseInt).orElse(location.port()),
                config.optional(Keys.CAPTURE_DATABASE).orElse(location.database()));
    }

    /**
     * The JDBC URL of everything capture does on the database besides the connector (session lock, state
     * table, source checks, retained-WAL monitor): {@code database.url} moved to the capture location, so a
     * replica or another host in {@code outbox.capture.connection.*} is the one whose slot is checked.
     */
    public static String captureUrl(QueueBoxConfig config) {
        String url = config.string(Keys.DATABASE_URL);
        DatabaseLocation location = captureLocation(config);
        boolean overridden = config.optional(Keys.CAPTURE_HOST).isPresent() || config.optional(Keys.CAPTURE_PORT).isPresent()
                || config.optional(Keys.CAPTURE_DATABASE).isPresent();
        return overridden ? Databases.of(config).relocate(url, location) : url;
    }

    /**
     * The account capture connects with: {@code outbox.capture.connection.username} when set, else
     * {@code database.username}, else the {@code user} of {@code database.url}; the password likewise
     * {@code outbox.capture.connection.password}, else {@code database.password}, else the URL's.
     */
    public static Account captureAccount(QueueBoxConfig config) {
        String url = config.string(Keys.DATABASE_URL);
        DatabaseProvider database = Databases.of(config);
        String username = config.optional(Keys.CAPTURE_USERNAME).or(() -> config.optional(Keys.DATABASE_USERNAME))
                .or(() -> database.urlProperty(url, "user")).orElse("");
        String password = config.optional(Keys.CAPTURE_PASSWORD).or(() -> config.optional(Keys.DATABASE_PASSWORD))
                .or(() -> database.urlProperty(url, "password")).orElse("");
        return new Account(username, password);
    }

    /** A database account; {@link #toString()} never shows the password. */
    public record Account(String username, String password) {
        @Override
        public String toString() {
            return "Account[" + username + "]";
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
