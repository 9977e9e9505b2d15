package io.queuebox.domain;

/** Where an outbox row stands. */
public enum RowStatus {
    /** Waiting for delivery (possibly under a lease, possibly not due yet). */
    PENDING,
    /** Delivered and confirmed by the broker. */
    SENT,
    /** Given up on until an operator replays it. */
    PARKED
}
