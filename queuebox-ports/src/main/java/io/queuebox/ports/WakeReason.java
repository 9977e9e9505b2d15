package io.queuebox.ports;

/** Why the delivery engine woke up. */
public enum WakeReason {
    /** The poll interval (polling mode) or reconciliation interval (capture mode) elapsed. */
    INTERVAL,
    /** A pending row's retry or a live lease falls due. */
    DEADLINE,
    /** The previous batch was full, so more rows are probably waiting. */
    FULL_BATCH,
    /** A capture source saw a new outbox row. */
    CAPTURE,
    /** A capture source is (re)starting its connector; delivery checks the table meanwhile. */
    CAPTURE_RESTART,
    /** Someone asked the engine to look now (an operator command, an application hint). */
    EXTERNAL,
    /** The engine is stopping. */
    SHUTDOWN
}
