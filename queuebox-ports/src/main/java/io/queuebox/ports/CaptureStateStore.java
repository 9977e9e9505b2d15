package io.queuebox.ports;

import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * The {@code queuebox_capture_state} table: which capture identities ran against this database and with
 * which settings. Reconciliation at start compares it with the state directory and the current settings.
 */
public interface CaptureStateStore {

    /** Every recorded identity, oldest first. The table is small (one row per identity ever run). */
    List<CaptureStateRecord> findAll();

    /** The row of one identity. */
    default Optional<CaptureStateRecord> find(CaptureIdentity identity) {
        return findAll().stream().filter(r -> r.identity().equals(identity)).findFirst();
    }

    /**
     * Records that {@code identity} starts with {@code fingerprint}: inserts the row on a first run
     * (first and last run now, on the database clock), or updates its last run time.
     */
    void recordStart(CaptureIdentity identity, CaptureMode mode, CaptureFingerprint fingerprint);

    /** Records the identity's current state and fault reason (or {@code null}) for {@code capture status}. */
    void recordStatus(CaptureIdentity identity, String state, String faultReason);

    /**
     * What {@link #recordStatus} last recorded for the identity, for {@code capture status}. Stores that do
     * not keep it answer empty (the default).
     */
    default Optional<RecordedStatus> recordedStatus(CaptureIdentity identity) {
        return Optional.empty();
    }

    /**
     * A recorded capture status.
     *
     * @param state       {@code RUNNING}, {@code RETRYING} or {@code FAULT}
     * @param faultReason the fault or last error, or {@code null}
     * @param recordedAt  when it was recorded, on the database clock
     */
    record RecordedStatus(String state, String faultReason, Instant recordedAt) {
    }

    /**
     * Forgets an identity: the operator's recovery step after a fault. The next start with an empty state
     * directory starts fresh.
     *
     * @return whether a row was removed
     */
    boolean forget(CaptureIdentity identity);
}
