package io.queuebox.ports;

import java.time.Instant;
import java.util.Objects;

/**
 * One row of {@code queuebox_capture_state}: a capture identity that ran against this database.
 *
 * @param identity    the identity written in the state directory's {@code identity} file
 * @param mode        the capture mode it ran in
 * @param fingerprint the settings it ran with
 * @param firstRunAt  when it first started
 * @param lastRunAt   when it last started
 */
public record CaptureStateRecord(CaptureIdentity identity, CaptureMode mode, CaptureFingerprint fingerprint,
                                 Instant firstRunAt, Instant lastRunAt) {
    public CaptureStateRecord {
        Objects.requireNonNull(identity, "identity");
        Objects.requireNonNull(mode, "mode");
        Objects.requireNonNull(fingerprint, "fingerprint");
        Objects.requireNonNull(firstRunAt, "firstRunAt");
        Objects.requireNonNull(lastRunAt, "lastRunAt");
    }
}
