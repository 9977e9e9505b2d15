package io.queuebox.ports;

import java.util.Optional;

/**
 * The database session lock that makes one process the owner of a capture identity. The lock lives on a
 * dedicated database session for the owner's whole run, so a process that dies or loses its connection
 * loses ownership.
 */
public interface CaptureLock {

    /**
     * Tries once, without waiting, to take the lock for {@code identity}.
     *
     * @return the held lock, or empty when another session holds it
     */
    Optional<Held> tryAcquire(CaptureIdentity identity);

    /** A held lock. Closing it releases the lock and its session. */
    interface Held extends AutoCloseable {

        /**
         * Whether the lock is still held: false once the session was lost (checked against the database,
         * so it costs a round trip).
         */
        boolean isHeld();

        @Override
        void close();
    }
}
