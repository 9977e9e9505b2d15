package io.queuebox.testkit.capture;

import io.queuebox.ports.Health;
import io.queuebox.ports.WakeReason;
import io.queuebox.ports.WakeSource;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * A wake source the test triggers: {@link #wake()} calls the engine's listener on the calling thread, as a
 * capture connector would on its own. It counts the wake-ups it delivered and keeps the {@link WakeSource}
 * rules: started once, silent after close. Thread-safe.
 */
public final class ManualWakeSource implements WakeSource {

    private final AtomicInteger delivered = new AtomicInteger();
    private volatile WakeListener listener;
    private volatile boolean closed;
    private volatile Health health = Health.up("manual wake source");

    @Override
    public synchronized void start(WakeListener newListener) {
        Objects.requireNonNull(newListener, "listener");
        if (listener != null) {
            throw new IllegalStateException("wake source already started");
        }
        if (closed) {
            throw new IllegalStateException("wake source is closed");
        }
        listener = newListener;
    }

    /** Wakes the engine as a capture event would. */
    public boolean wake() {
        return wake(WakeReason.CAPTURE);
    }

    /**
     * Calls the listener with {@code reason}.
     *
     * @return false when nobody listens (not started yet, or closed), so the wake-up was lost
     */
    public boolean wake(WakeReason reason) {
        Objects.requireNonNull(reason, "reason");
        return deliver(current -> current.wake(reason));
    }

    /**
     * Wakes the engine as a capture event about the inserted row {@code eventId} would
     * ({@link WakeListener#wakeFor}): an engine that claimed that row itself already starts no claim for it.
     *
     * @return false when nobody listens (not started yet, or closed), so the wake-up was lost
     */
    public boolean wakeFor(UUID eventId) {
        Objects.requireNonNull(eventId, "eventId");
        return deliver(current -> current.wakeFor(WakeReason.CAPTURE, eventId));
    }

    /**
     * Wakes the engine as one poll of the log that saw the inserted rows {@code eventIds} would: the capture connector
     * names every row of a poll in one wake-up ({@link WakeListener#wakeFor(WakeReason, Collection)}), so the engine
     * starts one claim for them at most, and none when it claimed all of them itself already. Counts as one wake-up.
     *
     * @return false when nobody listens (not started yet, or closed), so the wake-up was lost
     * @throws IllegalArgumentException when {@code eventIds} is empty: a poll that saw no inserted row wakes nobody
     */
    public boolean wakeFor(Collection<UUID> eventIds) {
        Objects.requireNonNull(eventIds, "eventIds");
        if (eventIds.isEmpty()) {
            throw new IllegalArgumentException("eventIds must name at least one row; use wake() for an unnamed wake-up");
        }
        List<UUID> rows = List.copyOf(eventIds); // rejects a null id before anybody is woken
        return deliver(current -> current.wakeFor(WakeReason.CAPTURE, rows));
    }

    /** Hands the wake-up to the listener, if one listens, and counts it. */
    private boolean deliver(Consumer<WakeListener> wakeUp) {
        WakeListener current = listener;
        if (current == null || closed) {
            return false;
        }
        wakeUp.accept(current);
        delivered.incrementAndGet();
        return true;
    }

    /** How many wake-ups reached the listener. */
    public int wakeUps() {
        return delivered.get();
    }

    /** Whether {@link #start} was called. */
    public boolean isStarted() {
        return listener != null;
    }

    public boolean isClosed() {
        return closed;
    }

    /** What {@link #health()} answers from now on, for example a connector fault. */
    public void reportHealth(Health newHealth) {
        this.health = Objects.requireNonNull(newHealth, "health");
    }

    @Override
    public Health health() {
        return health;
    }

    @Override
    public void close() {
        closed = true;
    }
}
