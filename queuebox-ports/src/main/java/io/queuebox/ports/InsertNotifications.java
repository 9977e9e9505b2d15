package io.queuebox.ports;

import java.time.Duration;

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

        /** Stops listening and closes the session. Idempotent, never throws. */
        @Override
        void close();
    }
}
