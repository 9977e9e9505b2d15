package io.queuebox.ports;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.UUID;

/**
 * The database telling, as it happens, that rows were committed into the outbox table: PostgreSQL's
 * LISTEN/NOTIFY, for example. A notification is only a hint, like every wake-up: the engine finds the rows
 * through the store, so a lost notification costs latency, never a message.
 *
 * <p>The wake source in the domain ({@code InsertNotificationWakeSource}) owns the rules around it: one
 * session at a time, reconnecting with backoff, waking delivery on every (re)connect and reporting health.
 * The adapter only opens the session and waits on it.
 */
public interface InsertNotifications {

    /**
     * Opens a session of its own (never one of a pool that delivery uses) and starts listening. Returns once
     * the database has confirmed it listens: an insert committed after the return is notified.
     *
     * @throws RuntimeException when the session cannot be opened or the database refuses to listen; the
     *                          message says why, without secrets
     */
    Subscription listen();

    /** What is listened to, for a person: for example {@code LISTEN "public.queuebox_outbox" on PostgreSQL}. */
    String description();

    /** A listening session. Used by one thread at a time; {@link #close} may come from any thread. */
    interface Subscription extends AutoCloseable {

        /**
         * Waits up to {@code timeout} for notifications and returns how many arrived (0 when none did). Several
         * notifications that arrived together are counted, but the caller only needs to know whether there were
         * any. When the wait ends without a notification, the implementation may check that the session is still
         * alive (a network that drops packets silently leaves a dead session that just stays quiet), taking at most
         * a few seconds more.
         *
         * @throws RuntimeException when the session was lost (terminated, network down, database restarted): the
         *                          caller closes it and opens another
         */
        int await(Duration timeout);

        /**
         * {@link #await}, with the rows the notifications named, for a database whose notifications say which rows
         * they are about (PostgreSQL from schema version 5). The engine then skips the claim when it claimed those
         * rows already, as it does for capture. The default names none, so every arrival wakes the engine.
         *
         * @throws RuntimeException as {@link #await} does
         */
        default Arrivals awaitArrivals(Duration timeout) {
            return Arrivals.unnamed(await(timeout));
        }

        /** Stops listening and closes the session. Idempotent, never throws. */
        @Override
        void close();
    }

    /**
     * Notifications that arrived together: how many, and the rows they named. {@code allNamed} is false when any
     * of them named no rows (a large insert, an older trigger, a notification of somebody else on the channel):
     * then the rows named say nothing about what else arrived.
     */
    record Arrivals(int count, List<UUID> eventIds, boolean allNamed) {

        public Arrivals {
            if (count < 0) {
                throw new IllegalArgumentException("count must not be negative: " + count);
            }
            eventIds = List.copyOf(Objects.requireNonNull(eventIds, "eventIds"));
        }

        /** {@code count} notifications that named no rows. */
        public static Arrivals unnamed(int count) {
            return new Arrivals(count, List.of(), false);
        }

        /** Whether the engine can be told exactly which rows arrived. */
        public boolean namesEveryRow() {
            return count > 0 && allNamed && !eventIds.isEmpty();
        }
    }
}
