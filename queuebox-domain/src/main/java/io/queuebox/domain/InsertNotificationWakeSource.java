package io.queuebox.domain;

import io.queuebox.ports.Health;
import io.queuebox.ports.InsertNotifications;
import io.queuebox.ports.WakeReason;
import io.queuebox.ports.WakeSource;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Wakes delivery when the database notifies inserts ({@link InsertNotifications}): the latency of capture
 * without a replication slot. One daemon thread ({@code queuebox-insert-listener}) holds one subscription.
 *
 * <ul>
 *   <li>{@link #health()} is UP only while the subscription listens; the engine polls on its fallback interval
 *       whenever it is not (see {@link DeliverySettings#fallbackWakeInterval()}), so a listener that fails slows
 *       delivery to polling and never stops it.</li>
 *   <li>Every successful subscribe wakes delivery ({@link WakeReason#NOTIFY_RESTART}): what was committed while
 *       nobody listened was never notified. Every notification wakes it ({@link WakeReason#NOTIFY}), naming
 *       its rows when every notification of an arrival named them ({@link InsertNotifications.Arrivals}), so
 *       that the engine skips a claim of rows it claimed already.</li>
 *   <li>A subscribe that fails or a session that is lost wakes delivery too (so that idle workers waiting the long
 *       reconciliation interval pick the fallback interval at once), then the listener subscribes again after
 *       {@link CaptureRestartBackoff}: 1 s doubling to 30 s, back to the start after a session that listened for
 *       {@link CaptureRestartBackoff#HEALTHY_RUN}.</li>
 *   <li>Nothing it does throws into the engine.</li>
 * </ul>
 */
public final class InsertNotificationWakeSource implements WakeSource {

    /** The longest single wait on the subscription, so that {@link #close()} is noticed promptly. */
    static final Duration AWAIT_SLICE = Duration.ofMillis(500);
    /**
     * How long close waits for the listener thread. Short: a listener stuck connecting to an unreachable
     * database must not hold up the engine's stop; the thread is a daemon and ends when its connect fails.
     */
    private static final Duration CLOSE_WAIT = Duration.ofMillis(500);

    private enum State { NOT_STARTED, CONNECTING, LISTENING, RETRYING, CLOSED }

    private final InsertNotifications notifications;
    private final Clock clock;
    private final ReentrantLock monitor = new ReentrantLock();
    private final Condition changed = monitor.newCondition();
    private final AtomicLong received = new AtomicLong();
    private final AtomicLong sessions = new AtomicLong();
    private boolean closed;
    private Thread thread;
    private InsertNotifications.Subscription current;
    private volatile State state = State.NOT_STARTED;
    private volatile String problem = "";
    private volatile int consecutiveFailures;
    private volatile Duration retryIn = Duration.ZERO;

    /** On the UTC system clock. */
    public InsertNotificationWakeSource(InsertNotifications notifications) {
        this(notifications, Clock.systemUTC());
    }

    /** {@code clock} measures how long a session listened, for the backoff. */
    public InsertNotificationWakeSource(InsertNotifications notifications, Clock clock) {
        this.notifications = Objects.requireNonNull(notifications, "notifications");
        this.clock = Objects.requireNonNull(clock, "clock");
    }

    /** Subscribes on a thread of its own; returns at once. */
    @Override
    public void start(WakeListener delivery) {
        Objects.requireNonNull(delivery, "delivery");
        monitor.lock();
        try {
            if (thread != null || closed) {
                throw new IllegalStateException("insert listener already " + (closed ? "closed" : "started"));
            }
            state = State.CONNECTING;
            thread = new Thread(() -> listen(delivery), "queuebox-insert-listener");
            thread.setDaemon(true);
            thread.start();
        } finally {
            monitor.unlock();
        }
    }

    /** Advisory: UP while listening; DOWN while connecting, retrying, before start and after close. */
    @Override
    public Health health() {
        State now = state;
        Map<String, Object> details = new LinkedHashMap<>();
        details.put("state", now.name());
        details.put("sessions", sessions.get());
        details.put("notifications", received.get());
        details.put("consecutiveFailures", consecutiveFailures);
        Health base = switch (now) {
            case LISTENING -> Health.up(notifications.description());
            case NOT_STARTED -> Health.down("insert listener not started");
            case CONNECTING -> Health.down(notifications.description() + ": connecting; delivery polls meanwhile");
            case RETRYING -> Health.down(notifications.description() + ": " + problem + "; retrying in "
                    + retryIn.toMillis() + " ms, delivery polls meanwhile");
            case CLOSED -> Health.down("insert listener closed");
        };
        return base.withDetails(details);
    }

    /** Notifications received since start, for metrics. */
    public long notificationsReceived() {
        return received.get();
    }

    /** Stops listening and closes the session. Idempotent. */
    @Override
    public void close() {
        Thread running;
        monitor.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            changed.signalAll();
            running = thread;
        } finally {
            monitor.unlock();
        }
        if (running != null) {
            try {
                running.join(CLOSE_WAIT.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        // A thread stuck in a subscription call: close its session from here, the contract allows it.
        InsertNotifications.Subscription left;
        monitor.lock();
        try {
            left = current;
            current = null;
        } finally {
            monitor.unlock();
        }
        if (left != null) {
            left.close();
        }
        state = State.CLOSED;
    }

    private void listen(WakeListener delivery) {
        CaptureRestartBackoff backoff = CaptureRestartBackoff.initial();
        while (!isClosed()) {
            InsertNotifications.Subscription subscription;
            try {
                subscription = notifications.listen();
            } catch (RuntimeException e) {
                backoff = backoff.failedAfter(Duration.ZERO);
                if (!retryAfter("cannot listen: " + describe(e), backoff, delivery)) {
                    return;
                }
                continue;
            }
            if (!adopt(subscription)) {
                subscription.close();
                return;
            }
            Instant since = clock.instant();
            sessions.incrementAndGet();
            consecutiveFailures = 0;
            state = State.LISTENING;
            delivery.wake(WakeReason.NOTIFY_RESTART);
            RuntimeException lost = awaitNotifications(subscription, delivery);
            release(subscription);
            if (lost == null) {
                return; // closed
            }
            Duration ranFor = Duration.between(since, clock.instant());
            backoff = backoff.failedAfter(ranFor);
            if (!retryAfter("session lost after " + ranFor.toMillis() + " ms: " + describe(lost), backoff, delivery)) {
                return;
            }
        }
    }

    /** Wakes delivery per notification until the session is lost (returned) or the source closed (null). */
    private RuntimeException awaitNotifications(InsertNotifications.Subscription subscription, WakeListener delivery) {
        try {
            while (!isClosed()) {
                InsertNotifications.Arrivals arrivals = subscription.awaitArrivals(AWAIT_SLICE);
                if (arrivals.count() > 0 && !isClosed()) {
                    received.addAndGet(arrivals.count());
                    if (arrivals.namesEveryRow()) {
                        delivery.wakeFor(WakeReason.NOTIFY, arrivals.eventIds());
                    } else {
                        delivery.wake(WakeReason.NOTIFY);
                    }
                }
            }
            return null;
        } catch (RuntimeException e) {
            return isClosed() ? null : e;
        }
    }

    /** Reports the problem, wakes delivery, waits out the backoff; false when closed meanwhile. */
    private boolean retryAfter(String why, CaptureRestartBackoff backoff, WakeListener delivery) {
        problem = why;
        retryIn = backoff.delay();
        consecutiveFailures = backoff.consecutiveFailures();
        state = State.RETRYING;
        delivery.wake(WakeReason.NOTIFY_RESTART);
        return awaitUnlessClosed(backoff.delay());
    }

    private boolean adopt(InsertNotifications.Subscription subscription) {
        monitor.lock();
        try {
            if (closed) {
                return false;
            }
            current = subscription;
            return true;
        } finally {
            monitor.unlock();
        }
    }

    private void release(InsertNotifications.Subscription subscription) {
        monitor.lock();
        try {
            if (current == subscription) {
                current = null;
            }
        } finally {
            monitor.unlock();
        }
        subscription.close();
    }

    /** Waits {@code delay} unless closed first; false when closed. */
    private boolean awaitUnlessClosed(Duration delay) {
        monitor.lock();
        try {
            long nanos = delay.toNanos();
            while (nanos > 0 && !closed) {
                nanos = changed.awaitNanos(nanos);
            }
            return !closed;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } finally {
            monitor.unlock();
        }
    }

    private boolean isClosed() {
        monitor.lock();
        try {
            return closed;
        } finally {
            monitor.unlock();
        }
    }

    private static String describe(RuntimeException e) {
        String message = e.getMessage();
        return message == null || message.isBlank() ? e.getClass().getSimpleName() : message;
    }

    @Override
    public String toString() {
        return "InsertNotificationWakeSource[" + notifications.description() + ", " + state + "]";
    }
}
