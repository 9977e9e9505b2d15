package io.queuebox.testkit.capture;

import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureLock;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The database's session locks in memory. One instance stands for one database: give the same instance to
 * two "processes" and only one of them holds a capture identity at a time. {@link #loseSession} plays a
 * dropped connection: the holder's lock is gone and {@link Held#isHeld()} says so. Thread-safe.
 */
public final class InMemoryCaptureLock implements CaptureLock {

    private final Map<CaptureIdentity, Long> owners = new HashMap<>();
    private final AtomicLong sessions = new AtomicLong();

    @Override
    public synchronized Optional<Held> tryAcquire(CaptureIdentity identity) {
        Objects.requireNonNull(identity, "identity");
        if (owners.containsKey(identity)) {
            return Optional.empty();
        }
        long session = sessions.incrementAndGet();
        owners.put(identity, session);
        return Optional.of(new SessionLock(identity, session));
    }

    /** Whether some session holds {@code identity}. */
    public synchronized boolean isLocked(CaptureIdentity identity) {
        return owners.containsKey(identity);
    }

    /**
     * Drops the session that holds {@code identity}, as when the database restarts or the connection is
     * cut: the lock is free again and the old holder's {@link Held#isHeld()} answers false.
     *
     * @return whether a session held it
     */
    public synchronized boolean loseSession(CaptureIdentity identity) {
        return owners.remove(identity) != null;
    }

    private synchronized boolean holds(CaptureIdentity identity, long session) {
        Long owner = owners.get(identity);
        return owner != null && owner == session;
    }

    private synchronized void release(CaptureIdentity identity, long session) {
        if (holds(identity, session)) {
            owners.remove(identity);
        }
    }

    private final class SessionLock implements Held {
        private final CaptureIdentity identity;
        private final long session;

        SessionLock(CaptureIdentity identity, long session) {
            this.identity = identity;
            this.session = session;
        }

        @Override
        public boolean isHeld() {
            return holds(identity, session);
        }

        @Override
        public void close() {
            release(identity, session);
        }

        @Override
        public String toString() {
            return "capture lock " + identity + " (session " + session + ")";
        }
    }
}
