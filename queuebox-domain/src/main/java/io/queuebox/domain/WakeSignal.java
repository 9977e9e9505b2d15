package io.queuebox.domain;

import io.queuebox.ports.WakeReason;
import java.time.Duration;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Where engine threads wait: for a wake-up, a timer chosen by a {@link Planner}, or shutdown. A
 * {@link #wake broadcast} ends every wait; a {@link #wakeOne single} wake-up ends one wait only (a ticket
 * the first waiter takes), so that news of one row wakes one claimer rather than every worker. Wake-ups
 * are counted, not queued, so any number of them while a worker is busy coalesce into one more claim.
 * Waiting uses {@link Condition#awaitNanos}, so timers run on the monotonic clock whatever
 * {@link java.time.Clock} the engine was given.
 */
final class WakeSignal {

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private long wakes;
    private WakeReason lastReason = WakeReason.EXTERNAL;
    private boolean ticket;
    private WakeReason ticketReason = WakeReason.EXTERNAL;
    // Whether every offer the pending ticket coalesces was news naming rows the caller tracks ({@link #wakeOne(WakeReason,
    // boolean)} with named): its claim is needed only while one of those rows is unclaimed.
    private boolean ticketNamedOnly;
    private long news;
    private long unnamedNews;
    private long scheduleVersion;
    private boolean shutdown;

    /** Computes the next timer from the interval still left (wake-ups and shutdown are handled here). */
    @FunctionalInterface
    interface Planner {
        WakeSchedule.Wake plan(Duration intervalLeft);
    }

    /**
     * Why a wait ended, and the wake-up count the waiter has now seen; {@code namedNewsOnly}: it ended by taking a
     * ticket that only news naming rows had offered (no poll, deadline, full batch or unnamed news in it).
     */
    record Woken(WakeReason reason, long wakesSeen, boolean namedNewsOnly) {
        Woken(WakeReason reason, long wakesSeen) {
            this(reason, wakesSeen, false);
        }
    }

    void wake(WakeReason reason) {
        lock.lock();
        try {
            if (!shutdown) {
                wakes++;
                lastReason = reason;
                changed.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Wakes one waiter: the first to look takes the ticket, the others go on waiting. Any number of these
     * before a waiter looks count as one.
     */
    void wakeOne(WakeReason reason) {
        wakeOne(reason, false);
    }

    /**
     * {@link #wakeOne(WakeReason)} for news whose rows the caller names ({@code named}) and tracks itself:
     * answers the news count this wake-up made.
     */
    long wakeOne(WakeReason reason, boolean named) {
        lock.lock();
        try {
            if (!shutdown) {
                news++;
                if (!named) {
                    unnamedNews++;
                }
                offerTicket(reason, named);
            }
            return news;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Hands a ticket to one waiter, as {@link #wakeOne} does, without news: it asks for a claim in another
     * worker's place (a poll or a deadline that worker is too busy for), and brings nothing a busy worker's
     * batch may have held back.
     */
    void handOne(WakeReason reason) {
        lock.lock();
        try {
            if (!shutdown) {
                offerTicket(reason, false);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Under the lock: the first waiter to look takes the ticket. */
    private void offerTicket(WakeReason reason, boolean namedNews) {
        ticketNamedOnly = (!ticket || ticketNamedOnly) && namedNews;
        ticket = true;
        ticketReason = reason;
        // All waiters look (one of them may be pausing after an error and ignore it); one takes it.
        changed.signalAll();
    }

    /** The news counts, read together. */
    News newsSoFar() {
        lock.lock();
        try {
            return new News(news, unnamedNews);
        } finally {
            lock.unlock();
        }
    }

    /**
     * How many {@link #wakeOne} calls there were, and how many of them named no row. A busy worker compares them
     * before and after its batch: news that arrived meanwhile may be about a row its own batch held back (a later
     * event of an aggregate it was publishing), which the idle worker that took the ticket could not claim.
     */
    record News(long all, long unnamed) {
    }

    /** The reason of the latest {@link #wakeOne}. */
    WakeReason newsReason() {
        lock.lock();
        try {
            return ticketReason;
        } finally {
            lock.unlock();
        }
    }

    /** Takes a pending ticket, if any: the caller is about to claim, which covers the news it brought. */
    void takeTicket() {
        lock.lock();
        try {
            ticket = false;
        } finally {
            lock.unlock();
        }
    }

    /** A deadline was added: waiters recompute their timers. */
    void scheduleChanged() {
        lock.lock();
        try {
            scheduleVersion++;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    void shutdown() {
        lock.lock();
        try {
            shutdown = true;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    boolean isShutdown() {
        lock.lock();
        try {
            return shutdown;
        } finally {
            lock.unlock();
        }
    }

    long wakes() {
        lock.lock();
        try {
            return wakes;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits until a wake-up newer than {@code wakesSeen}, shutdown, or the planned timer. The interval
     * counts down across schedule changes, so a new deadline never postpones the interval wake.
     */
    Woken await(long wakesSeen, Duration interval, Planner planner) {
        return await(wakesSeen, interval, planner, () -> true);
    }

    /**
     * {@link #await(long, Duration, Planner)} for a waiter that takes a {@link #wakeOne} ticket only while
     * {@code takesTickets} answers true (read under this signal's lock): a worker whose batch is still with its
     * publish stage is busy, so news goes to an idle worker, or waits until a {@link #scheduleChanged} makes
     * it look again.
     */
    Woken await(long wakesSeen, Duration interval, Planner planner, java.util.function.BooleanSupplier takesTickets) {
        lock.lock();
        try {
            long intervalLeft = interval.toNanos();
            while (true) {
                // Shutdown and wake-ups end every wait, whatever the planner makes of them.
                if (shutdown) {
                    return new Woken(WakeReason.SHUTDOWN, wakes);
                }
                if (wakes != wakesSeen) {
                    return new Woken(lastReason, wakes);
                }
                if (ticket && takesTickets.getAsBoolean()) {
                    ticket = false;
                    return new Woken(ticketReason, wakes, ticketNamedOnly);
                }
                WakeSchedule.Wake wake = planner.plan(Duration.ofNanos(Math.max(0, intervalLeft)));
                long delay = wake.delay().toNanos();
                if (delay <= 0) {
                    return new Woken(wake.reason(), wakes);
                }
                long version = scheduleVersion;
                long left = delay;
                while (left > 0 && !shutdown && wakes == wakesSeen && !(ticket && takesTickets.getAsBoolean())
                        && version == scheduleVersion) {
                    left = changed.awaitNanos(left);
                }
                intervalLeft -= delay - Math.max(left, 0);
                if (left <= 0 && !(ticket && takesTickets.getAsBoolean()) && wakes == wakesSeen) {
                    return new Woken(wake.reason(), wakes);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Woken(WakeReason.SHUTDOWN, wakesSeen);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits for {@code pause} ignoring wake-ups (a back-off after an error).
     *
     * @return false when the wait ended by shutdown or interruption
     */
    boolean pause(Duration pause) {
        lock.lock();
        try {
            long left = pause.toNanos();
            while (left > 0 && !shutdown) {
                left = changed.awaitNanos(left);
            }
            return !shutdown;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } finally {
            lock.unlock();
        }
    }
}
