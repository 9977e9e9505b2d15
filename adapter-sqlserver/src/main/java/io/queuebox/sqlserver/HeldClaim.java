package io.queuebox.sqlserver;

import java.sql.SQLException;
import java.time.Duration;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import java.util.function.ToIntFunction;
import org.jdbi.v3.core.Handle;

/**
 * One claim that holds its rows by the update locks of an open transaction, on a connection of its own, and the
 * rows that still wait for an outcome. The transaction commits when the last of them has one, so a claim's
 * outcomes become visible together, and rolls back (every row as it was) when anything goes wrong.
 *
 * <p>SQL Server has no idle-in-transaction timeout, so the deadline is kept here: the lease length, restarted by
 * a renewal and by every outcome. Past it, an outcome writes nothing (0 rows), and a timer ends the claim by
 * closing its connection ({@link java.sql.Connection#abort}: no round trip, so a relay cut off from the server
 * cannot hang in it), which makes the server roll the transaction back once the close reaches it. A relay that
 * dies frees its rows when the server sees its connection close.
 *
 * <p>Update locks do not make a READPAST reader skip a row, so the table cannot tell which rows a held claim
 * holds without taking locks itself. What this process holds is kept in {@link #heldRows} for the store's
 * statistics and next due time; the rows other processes hold are not counted there.
 *
 * <p>Calls for one claim come from its worker (outcomes), the lease renewer and the timer, so they are
 * serialised here: a JDBC connection is not for two threads at once.
 */
final class HeldClaim {

    private static final ScheduledExecutorService DEADLINES = Executors.newSingleThreadScheduledExecutor(task -> {
        Thread thread = new Thread(task, "queuebox-sqlserver-held-claims");
        thread.setDaemon(true);
        return thread;
    });

    /** The held claims of this process that have not ended, by the outbox table they hold rows of. */
    private static final Map<String, Set<HeldClaim>> LIVE = new ConcurrentHashMap<>();

    private final String table;
    private final Handle handle;
    private final Set<UUID> unresolved;
    private Duration leaseLength;
    private volatile long deadlineNanos;
    private volatile boolean ended;
    private volatile boolean busy;

    private HeldClaim(String table, Handle handle, Collection<UUID> eventIds, Duration leaseLength) {
        this.table = table;
        this.handle = handle;
        this.unresolved = ConcurrentHashMap.newKeySet();
        this.unresolved.addAll(eventIds);
        this.leaseLength = leaseLength;
        this.deadlineNanos = System.nanoTime() + leaseLength.toNanos();
    }

    /** Holds the rows of a claim whose transaction is open on {@code handle}, until its outcomes or its deadline. */
    static HeldClaim start(String table, Handle handle, Collection<UUID> eventIds, Duration leaseLength) {
        HeldClaim claim = new HeldClaim(table, handle, eventIds, leaseLength);
        LIVE.computeIfAbsent(table, t -> ConcurrentHashMap.newKeySet()).add(claim);
        claim.checkAt(leaseLength.toNanos());
        return claim;
    }

    /**
     * Writes one kind of outcome for the rows of {@code eventIds} that this claim still holds, and commits once
     * no row is left without an outcome.
     *
     * @param write runs the statement for the rows it is given
     * @return how many of the rows this claim held; 0 when it was lost or is past its deadline
     */
    synchronized int resolve(Collection<UUID> eventIds, ToIntFunction<List<UUID>> write) {
        return whileLive(() -> {
            List<UUID> mine = eventIds.stream().distinct().filter(unresolved::contains).toList();
            if (mine.isEmpty()) {
                return 0;
            }
            write.applyAsInt(mine);
            deadlineNanos = System.nanoTime() + leaseLength.toNanos();
            // One remove per row: Set.removeAll(list) walks the set and asks the list, quadratic for a whole batch.
            mine.forEach(unresolved::remove);
            if (unresolved.isEmpty()) {
                end();
                try {
                    handle.commit();
                } finally {
                    closeQuietly(); // a failed commit must not keep the pooled connection
                }
            }
            return mine.size();
        });
    }

    /**
     * Checks that the transaction is still open ({@code stillOpen}) and restarts the deadline with a new lease
     * length; answers how many rows the claim still holds, 0 once it is lost or past its deadline.
     */
    synchronized int renew(Duration leaseLength, Runnable stillOpen) {
        return whileLive(() -> {
            stillOpen.run();
            this.leaseLength = leaseLength;
            deadlineNanos = System.nanoTime() + leaseLength.toNanos();
            return unresolved.size();
        });
    }

    /**
     * Runs a statement of a claim that has neither ended nor passed its deadline (0 otherwise); a failure ends
     * the claim, and one that says the transaction is gone counts as a lost claim: 0.
     */
    private int whileLive(IntSupplier statement) {
        if (ended) {
            return 0;
        }
        if (pastDeadline()) {
            abort();
            return 0;
        }
        busy = true;
        try {
            return statement.getAsInt();
        } catch (RuntimeException e) {
            abort();
            if (lost(e)) {
                return 0;
            }
            throw e;
        } finally {
            busy = false;
        }
    }

    Handle handle() {
        return handle;
    }

    boolean ended() {
        return ended;
    }

    /** How long until this claim ends on its own if nothing is said for it. */
    Duration remaining() {
        return Duration.ofNanos(Math.max(0, deadlineNanos - System.nanoTime()));
    }

    /** Past its deadline with no word from its caller. */
    boolean abandoned() {
        return !ended && pastDeadline();
    }

    private boolean pastDeadline() {
        return System.nanoTime() - deadlineNanos > 0;
    }

    /** Rolls back: every row goes back exactly as it was. Quiet, since the connection may be gone already. */
    synchronized void abort() {
        if (ended) {
            return;
        }
        end();
        try {
            handle.rollback();
        } catch (RuntimeException ignored) {
            // the transaction is gone with its connection: nothing is left to roll back
        }
        closeQuietly();
    }

    private void end() {
        ended = true;
        Set<HeldClaim> claims = LIVE.get(table);
        if (claims != null) {
            claims.remove(this);
        }
    }

    private void checkAt(long delayNanos) {
        DEADLINES.schedule(this::expireIfDue, Math.max(1, delayNanos), TimeUnit.NANOSECONDS);
    }

    /**
     * On the timer: a claim past its deadline loses its connection. A statement in flight is left to finish (the
     * connection's query timeout bounds it), as SQL Server would only count idle time; the check comes back.
     */
    private void expireIfDue() {
        if (ended) {
            return;
        }
        long left = deadlineNanos - System.nanoTime();
        if (left > 0 || busy) {
            checkAt(left > 0 ? left : leaseLength.toNanos());
            return;
        }
        try {
            handle.getConnection().abort(Runnable::run);
        } catch (SQLException | RuntimeException ignored) {
            // closed already; abort() below still ends the claim
        }
        abort();
    }

    private void closeQuietly() {
        try {
            handle.close();
        } catch (RuntimeException ignored) {
            // closing a broken connection: the pool discards it
        }
    }

    /** The rows that held claims of this process on {@code table} still hold. */
    static Set<UUID> heldRows(String table) {
        Set<UUID> rows = new HashSet<>();
        for (HeldClaim claim : LIVE.getOrDefault(table, Set.of())) {
            if (!claim.ended) {
                rows.addAll(claim.unresolved); // a concurrent set: read without waiting for a statement in flight
            }
        }
        return rows;
    }

    /** The soonest deadline of the held claims of this process on {@code table}. */
    static Optional<Duration> soonestDeadline(String table) {
        return LIVE.getOrDefault(table, Set.of()).stream().filter(claim -> !claim.ended)
                .map(HeldClaim::remaining).min(Duration::compareTo);
    }

    /** Ends every held claim of this process on {@code table}: each rolls back and gives its connection back. */
    static void abortAll(String table) {
        for (HeldClaim claim : List.copyOf(LIVE.getOrDefault(table, Set.of()))) {
            claim.abort();
        }
    }

    /**
     * Whether a failure means the claim's transaction is gone: the connection is (class 08), SQL Server chose it
     * as a deadlock victim and rolled it back (40001), or {@link TransactionGone}.
     */
    static boolean lost(Throwable failure) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof TransactionGone) {
                return true;
            }
            if (cause instanceof SQLException sql) {
                String state = sql.getSQLState();
                if (state != null && (state.startsWith("08") || state.equals("40001"))) {
                    return true;
                }
            }
        }
        return false;
    }

    /** The claim's connection answers, but its transaction was rolled back: it holds nothing any more. */
    static final class TransactionGone extends RuntimeException {
        TransactionGone() {
            super("the held claim's transaction is no longer open", null, false, false);
        }
    }
}
