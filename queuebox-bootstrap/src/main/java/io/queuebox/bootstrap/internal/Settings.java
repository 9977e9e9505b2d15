package io.queuebox.bootstrap.internal;

import io.queuebox.bootstrap.config.Keys;
import io.queuebox.bootstrap.config.QueueBoxConfig;
import io.queuebox.domain.DeliverySettings;
import io.queuebox.domain.RetryPolicy;
import io.queuebox.ports.CaptureMode;
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

    public static PostgresOutboxSettings outbox(QueueBoxConfig config) {
        return PostgresOutboxSettings.builder()
                .schema(config.string(Keys.OUTBOX_SCHEMA))
                .table(config.string(Keys.OUTBOX_TABLE))
                .deleteOnSend(config.bool(Keys.OUTBOX_DELETE_ON_SEND))
                .build();
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
