package io.queuebox.ports;

/**
 * What a parked row means for the later rows of its aggregate when ordering is
 * {@link Ordering#PER_AGGREGATE}. Without ordering a parked row holds nothing back.
 */
public enum ParkingPolicy {
    /**
     * The default: later events of the aggregate wait until an operator replays (or removes) the parked
     * one, so consumers never see an aggregate's events out of order.
     */
    HOLD_AGGREGATE,
    /** Later events of the aggregate are delivered; the parked event is skipped until replayed. */
    CONTINUE_AGGREGATE
}
