package io.queuebox.ports;

import java.util.Collection;
import java.util.UUID;

/**
 * Something that says "there may be new work now": a capture connector reading the database log, or
 * an application hint. A wake-up is only a hint; the engine always finds the work through the store,
 * so a lost wake-up costs latency, never a message.
 *
 * <p>{@link #start} is called once; the source calls the listener from any thread, as often as it
 * likes (the engine coalesces wake-ups). A source that fails keeps failing on its own: it reports the
 * fault through {@link #health()} and never throws into the engine.
 */
public interface WakeSource extends AutoCloseable {

    /** Starts watching and calls {@code listener} whenever new work may exist. Returns promptly. */
    void start(WakeListener listener);

    /** The source's state, reported as an advisory component: a down source never stops delivery. */
    Health health();

    /** Stops watching. Idempotent. After close the listener is not called again. */
    @Override
    void close();

    /** Receives wake-ups. Implementations return at once. */
    @FunctionalInterface
    interface WakeListener {
        void wake(WakeReason reason);

        /**
         * A wake-up about one inserted row, for a source that knows which (a capture connector reads the row's
         * event id from the log). The engine skips the claim when it already claimed that row itself: the log
         * runs behind the table, so the row's claim often came before the news of it. The default wakes as
         * {@link #wake} does.
         */
        default void wakeFor(WakeReason reason, UUID eventId) {
            wake(reason);
        }

        /**
         * {@link #wakeFor(WakeReason, UUID)} for the rows of one commit, one notification or one poll of the log: one
         * wake-up at most.
         * The default wakes as {@link #wake} does.
         */
        default void wakeFor(WakeReason reason, Collection<UUID> eventIds) {
            wake(reason);
        }
    }
}
