package io.queuebox.domain;

import io.queuebox.ports.CaptureIdentity;
import java.util.Objects;
import java.util.Optional;

/**
 * Where capture stands, for health, metrics and {@code queuebox capture status}.
 *
 * @param state               the current state
 * @param identity            the capture identity, once known
 * @param fault               the named fault when {@code state} is {@link State#FAULT}
 * @param message             one line for a person: the fault, the last connector error, or what it does
 * @param consecutiveFailures connector failures since the last healthy run
 */
public record CaptureStatus(State state, Optional<CaptureIdentity> identity, Optional<FaultReason> fault,
                            String message, int consecutiveFailures) {

    /** The states of capture. Only {@link #RUNNING} is healthy; every state keeps delivery running. */
    public enum State {
        /** Capture is off ({@code enabled: false} or mode {@code polling}). */
        DISABLED,
        /** Reconciling the state and starting the connector. */
        STARTING,
        /** The connector streams and wakes delivery. */
        RUNNING,
        /** The connector failed; it is restarted with backoff. */
        RETRYING,
        /**
         * A fault; capture is stopped. Every fault but {@link FaultReason#OWNERSHIP_LOST} needs an operator and is
         * not retried; after a lost lock capture tries to take it again with the restart backoff.
         */
        FAULT,
        /** Capture was closed. */
        STOPPED
    }

    /**
     * Why capture stopped and waits for an operator: the five faults of reconciliation, plus the checks
     * made before a connector starts.
     */
    public enum FaultReason {
        /** The state directory is missing or empty, but the database says capture ran before. */
        STATE_MISSING,
        /** The state files belong to a different instance. */
        FOREIGN_STATE,
        /** A setting that gives the recorded offsets their meaning changed. */
        SETTINGS_CHANGED,
        /** The replication slot disappeared while the state remains. */
        SLOT_MISSING,
        /** Another process owns the capture identity. */
        IDENTITY_OWNED,
        /** The state directory cannot be written. */
        STATE_DIRECTORY_NOT_WRITABLE,
        /** The database is not set up for capture (publication, wal_level, CDC, Agent). */
        SOURCE_NOT_READY,
        /**
         * The database session that held the owner's lock was lost while capture ran (found within one
         * reconciliation interval). The connector is stopped; the lock is taken again after the restart backoff,
         * unless another process holds it now ({@link #IDENTITY_OWNED}).
         */
        OWNERSHIP_LOST
    }

    public CaptureStatus {
        Objects.requireNonNull(state, "state");
        Objects.requireNonNull(identity, "identity");
        Objects.requireNonNull(fault, "fault");
        Objects.requireNonNull(message, "message");
    }

    static CaptureStatus of(State state, CaptureIdentity identity, String message, int failures) {
        return new CaptureStatus(state, Optional.ofNullable(identity), Optional.empty(), message, failures);
    }

    static CaptureStatus fault(FaultReason reason, CaptureIdentity identity, String message) {
        return new CaptureStatus(State.FAULT, Optional.ofNullable(identity), Optional.of(reason), message, 0);
    }

    public boolean healthy() {
        return state == State.RUNNING;
    }
}
