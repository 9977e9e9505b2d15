package io.queuebox.ports;

/** Whether the claim keeps events of one aggregate in order. */
public enum Ordering {
    /**
     * A row is claimable only when every earlier row of its aggregate is sent (or, under
     * {@link ParkingPolicy#CONTINUE_AGGREGATE}, parked) or is claimed in the same batch. The default.
     */
    PER_AGGREGATE,
    /** Any due row is claimable; rows of one aggregate may be delivered out of order. For throughput. */
    NONE
}
