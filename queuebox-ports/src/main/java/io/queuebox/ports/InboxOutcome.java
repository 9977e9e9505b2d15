package io.queuebox.ports;

/** What {@link Inbox#process} did with a delivery. */
public enum InboxOutcome {
    /** The key was new: it is recorded and the handler ran, both in the caller's transaction. */
    PROCESSED,
    /** The key was recorded before (committed, or earlier in this transaction): the handler did not run. */
    DUPLICATE
}
