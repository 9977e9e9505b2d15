package io.queuebox.ports;

import java.util.Arrays;
import java.util.stream.Collectors;

/** How delivery learns that new rows exist: {@code outbox.capture.mode}. */
public enum CaptureMode {
    /** The default: delivery polls every {@code outbox.pollIntervalMs}. Any database. */
    POLLING("polling"),
    /** PostgreSQL logical replication (pgoutput) wakes delivery. */
    POSTGRES_LOGICAL("postgres-logical"),
    /** SQL Server change data capture tables wake delivery. */
    SQLSERVER_CDC("sqlserver-cdc");

    private final String configName;

    CaptureMode(String configName) {
        this.configName = configName;
    }

    /** The value as written in configuration. */
    public String configName() {
        return configName;
    }

    /**
     * The mode for a configuration value.
     *
     * @throws IllegalArgumentException naming the value and the allowed ones
     */
    public static CaptureMode fromConfig(String value) {
        for (CaptureMode mode : values()) {
            if (mode.configName.equals(value)) {
                return mode;
            }
        }
        throw new IllegalArgumentException("unknown capture mode '" + value + "', allowed: "
                + Arrays.stream(values()).map(CaptureMode::configName).collect(Collectors.joining(", ")));
    }
}
