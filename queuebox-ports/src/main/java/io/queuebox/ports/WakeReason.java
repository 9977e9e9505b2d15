package io.queuebox.ports;

/** Why the delivery engine woke up. */
public enum WakeReason {
    /** The poll interval (polling mode) or reconciliation interval (capture or notify mode) elapsed. */
    INTERVAL,
    /** A pending row's retry or a live lease falls due. */
    DEADLINE,
    /** The previous batch was full, so more rows are probably waiting. */
    FULL_BATCH,
    /**
     * The previous batch held back a later row of one of its aggregates ({@link ClaimBatch#holdsBack()}), which may
     * be claimable now that the batch's outcome is written.
     */
    HELD_BACK,
    /** A capture source saw a new outbox row. */
    CAPTURE,
    /** A capture source is (re)starting its connector; delivery checks the table meanwhile. */
    CAPTURE_RESTART,
    /** The database notified that rows were inserted into the outbox table ({@link InsertNotifications}). */
    NOTIFY,
    /**
     * The insert listener (re)connected, or lost its session: notifications sent while nobody listened are
     * lost, so delivery checks the table.
     */
    NOTIFY_RESTART,
    /** Someone asked the engine to look now (an operator command, an application hint). */
    EXTERNAL,
    /** The engine is stopping. */
    SHUTDOWN
}
