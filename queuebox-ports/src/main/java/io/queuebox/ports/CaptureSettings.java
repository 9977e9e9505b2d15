package io.queuebox.ports;

import java.time.Duration;
import java.util.Objects;

/**
 * Capture as configured ({@code outbox.capture.*}), after the host, port and database were taken from
 * {@code database.url} and overridden by {@code outbox.capture.connection.*}.
 *
 * @param enabled                {@code outbox.capture.enabled}; false by default
 * @param mode                   {@code outbox.capture.mode}; polling by default
 * @param fingerprint            slot, publication, schema, table, host and database
 * @param port                   database port capture connects to
 * @param stateDirectory         {@code outbox.capture.stateDirectory}
 * @param reconciliationInterval {@code outbox.capture.reconciliationIntervalMs}: the longest delivery
 *                               waits without a capture event
 */
public record CaptureSettings(boolean enabled, CaptureMode mode, CaptureFingerprint fingerprint, int port,
                             String stateDirectory, Duration reconciliationInterval) {
    public CaptureSettings {
        Objects.requireNonNull(mode, "mode");
        Objects.requireNonNull(fingerprint, "fingerprint");
        Objects.requireNonNull(stateDirectory, "stateDirectory");
        Objects.requireNonNull(reconciliationInterval, "reconciliationInterval");
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("port must be 1-65535, got: " + port);
        }
    }

    /** Whether a connector runs: enabled and a mode other than polling. */
    public boolean active() {
        return enabled && mode != CaptureMode.POLLING;
    }
}
