package io.queuebox.postgres;

import java.sql.SQLException;
import java.time.Duration;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntSupplier;
import java.util.function.Predicate;
import java.util.function.ToIntFunction;
import org.jdbi.v3.core.Handle;

/**
 * One claim that holds its rows by their row locks: the open transaction on a connection of its own, and the
 * rows that still wait for an outcome. The transaction commits when the last of them has one, so a claim's
 * outcomes become visible together, and rolls back (freeing every row as it was) when anything goes wrong.
 *
 * <p>The database ends the claim on its own when the relay dies (the connection closes) or stops answering
 * (the transaction's {@code idle_in_transaction_session_timeout}, set to the lease length and restarted by
 * each statement); then every later call finds the connection gone, and the claim counts as lost: 0 rows.
 *
 * <p>Calls for one claim come from its worker (outcomes) and from the lease renewer, so they are serialised
 * here: a JDBC connection is not for two threads at once. The store's other claims only read whether it ended and
 * when its lease runs out, and sweep it when abandoned, without waiting for a statement of its in progress: an
 * outcome that waits (on a lock, a slow commit) must hold up its own claim only, not every worker's next claim.
 */
final class HeldClaim {

    private final ReentrantLock lock = new ReentrantLock();
    private final Handle handle;
    private final Set<UUID> unresolved;
    private Duration leaseLength;
    /**
     * The database's idle countdown starts when a statement ends, somewhere between its send and its answer. Counted
     * from the send, the earliest the database may end an idle claim (a wake-up hint, {@link #remaining()}); counted
     * from the answer, when an idle claim has ended, give or take the server's timer (when the sweep may give its
     * connection back). What the engine promises rests on its own lease clock, not on either.
     */
    private volatile long deadlineNanos;
    private volatile long surelyEndedNanos;
    private volatile boolean ended;

    /**
     * @param lastSentNanos when the claim's latest statement was sent ({@link System#nanoTime()}): the database's
     *                      idle countdown began after it
     * @param answeredNanos when that statement's answer came: the countdown began before it
     */
    HeldClaim(Handle handle, Collection<UUID> eventIds, Duration leaseLength, long lastSentNanos, long answeredNanos) {
        this.handle = handle;
        this.unresolved = new HashSet<>(eventIds);
        this.leaseLength = leaseLength;
        this.deadlineNanos = lastSentNanos + leaseLength.toNanos();
        this.surelyEndedNanos = answeredNanos + leaseLength.toNanos();
    }

    /**
     * Writes one kind of outcome for the rows of {@code eventIds} that this claim still holds, and commits once
     * no row is left without an outcome.
     *
     * @param write runs the statement for the rows it is given (empty for an outcome that writes nothing)
     * @return how many of the rows this claim held; 0 when it was lost
     */
    int resolve(Collection<UUID> eventIds, ToIntFunction<List<UUID>> write) {
        return underLock(() -> resolveLocked(eventIds, write));
    }

    private int resolveLocked(Collection<UUID> eventIds, ToIntFunction<List<UUID>> write) {
        if (ended) {
            return 0;
        }
        List<UUID> mine = eventIds.stream().distinct().filter(unresolved::contains).toList();
        if (mine.isEmpty()) {
            return 0;
        }
        try {
            long sent = System.nanoTime();
            write.applyAsInt(mine);
            // Any statement restarts PostgreSQL's idle countdown, not only a renewal: keep the same clock here, or
            // the store would take a claim the database still keeps for abandoned, and roll it back.
            restarted(sent, System.nanoTime());
            // One remove per row: Set.removeAll(list) walks the set and asks the list, quadratic for a whole batch.
            mine.forEach(unresolved::remove);
            if (unresolved.isEmpty()) {
                ended = true;
                try {
                    handle.commit();
                } finally {
                    closeQuietly(); // a failed commit must not keep the pooled connection
                }
            }
            return mine.size();
        } catch (RuntimeException e) {
            abortLocked();
            if (lost(e)) {
                return 0;
            }
            throw e;
        }
    }

    /** Restarts the idle timer with a new lease length; answers how many rows the claim still holds. */
    int renew(Duration leaseLength, Runnable restartTimer) {
        return underLock(() -> renewLocked(leaseLength, restartTimer));
    }

    /** Runs one statement of this claim, waiting for any other in progress: one connection, one thread at a time. */
    private int underLock(IntSupplier statement) {
        lock.lock();
        try {
            return statement.getAsInt();
        } finally {
            lock.unlock();
        }
    }

    private int renewLocked(Duration leaseLength, Runnable restartTimer) {
        if (ended) {
            return 0;
        }
        try {
            long sent = System.nanoTime();
            restartTimer.run();
            this.leaseLength = leaseLength;
            restarted(sent, System.nanoTime());
            return unresolved.size();
        } catch (RuntimeException e) {
            abortLocked();
            if (lost(e)) {
                return 0;
            }
            throw e;
        }
    }

    /** A statement sent at {@code sent} and answered at {@code answered} restarted the database's idle countdown. */
    private void restarted(long sent, long answered) {
        deadlineNanos = sent + leaseLength.toNanos();
        surelyEndedNanos = answered + leaseLength.toNanos();
    }

    Handle handle() {
        return handle;
    }

    boolean ended() {
        return ended;
    }

    /**
     * How long until the database may, at the earliest, end this claim on its own if nothing is said on its
     * connection: a wake-up hint. While a statement of the claim runs, the countdown of the one before (the database's
     * is stopped then: it counts idle time only), so after a statement longer than the lease it is zero while the
     * claim may live one more lease.
     */
    Duration remaining() {
        return Duration.ofNanos(Math.max(0, deadlineNanos - System.nanoTime()));
    }

    /**
     * A lease past its latest statement's answer with no word from its caller, the database has ended it: gives the
     * connection back and answers true. A claim with a statement in progress is not idle, so the database has not
     * ended it for that: left alone, without waiting for the statement.
     */
    boolean abortIfAbandoned() {
        if (!lock.tryLock()) {
            return false;
        }
        try {
            if (ended || System.nanoTime() - surelyEndedNanos <= 0) {
                return false;
            }
            abortLocked();
            return true;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Rolls back, under the lock: every row goes back exactly as it was. Quiet, since the connection may be gone
     * already.
     */
    private void abortLocked() {
        if (ended) {
            return;
        }
        ended = true;
        try {
            handle.rollback();
        } catch (RuntimeException ignored) {
            // the transaction is gone with its connection: nothing is left to roll back
        }
        closeQuietly();
    }

    private void closeQuietly() {
        try {
            handle.close();
        } catch (RuntimeException ignored) {
            // closing a broken connection: the pool discards it
        }
    }

    /**
     * Whether a failure means the database ended the claim: the connection is gone (class 08), the server
     * ended the session (57P01-57P03, 25P03 for the idle timeout), or the driver closed it.
     */
    static boolean lost(Throwable failure) {
        return hasSqlState(failure, state -> state.startsWith("08") || state.startsWith("57P") || state.equals("25P03"));
    }

    /** Whether {@code failure} or one of its causes is an {@link SQLException} whose SQL state {@code matches}. */
    static boolean hasSqlState(Throwable failure, Predicate<String> matches) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof SQLException sql && sql.getSQLState() != null && matches.test(sql.getSQLState())) {
                return true;
            }
        }
        return false;
    }
}
