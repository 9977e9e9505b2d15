package io.queuebox.postgres;

import io.queuebox.jdbc.Json;
import io.queuebox.jdbc.StoreArguments;
import io.queuebox.ports.BacklogStats;
import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.Park;
import io.queuebox.ports.ParkedEvent;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.ports.ReplaySelector;
import io.queuebox.ports.Reschedule;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.Query;
import org.jdbi.v3.core.statement.SqlStatement;
import org.jdbi.v3.core.statement.TemplateEngine;
import org.jdbi.v3.core.statement.Update;

/**
 * With {@link PostgresOutboxSettings#holdRowLocks()} (the default), a claim is a transaction that keeps its rows'
 * locks, on a connection of its own, until each row has its outcome ({@link HeldClaim}); every other method is
 * one statement in its own short transaction. Without it, every method is one short transaction and a claim
 * writes a lease on each row, so no lock outlives a call.
 */
final class PostgresOutboxStore implements OutboxStore {

    private final Jdbi jdbi;
    private final PostgresOutboxSettings settings;
    private final OutboxSql sql;
    private final Map<LeaseToken, HeldClaim> held = new ConcurrentHashMap<>();
    /** Each delivery statement with the planner settings ahead of it ({@link IndexPlans}), made once, not per call. */
    private final Map<String, String> indexed = new ConcurrentHashMap<>();
    /**
     * Held ordered claims of this store choose and lock one at a time. The choice locks nothing, so two claims
     * that chose at once chose the same rows, and the one that locked second found them taken and chose again:
     * with two workers, nearly every other claim did the choosing twice (measured: 773 choices for 404 claims).
     * Claims of other processes take turns too, through a session advisory lock (OutboxSql CHOICE_TURN_LOCK_KEY):
     * with four relay processes, 27 % of the rows chosen were lost to another relay's claim before they were
     * locked. A claim waits for its turn briefly and never across a parking at claim ({@link Choice}).
     */
    private final ReentrantLock orderedChoice = new ReentrantLock();
    /**
     * Whether this store's latest held ordered claim came back full, or found every due row held elsewhere: a backlog
     * that other relays may be claiming too. Only then does a claim take the turn among processes (two statements
     * more, about 0.2 ms): an idle relay's claim stays one statement, and a partial batch of live traffic rarely
     * meets another relay's choice.
     */
    private volatile boolean backlogSeen;

    PostgresOutboxStore(Jdbi jdbi, PostgresOutboxSettings settings) {
        this.jdbi = Objects.requireNonNull(jdbi, "jdbi");
        this.settings = Objects.requireNonNull(settings, "settings");
        this.sql = new OutboxSql(settings);
    }

    /**
     * Most claim statements one call runs to fill a batch that parking at claim shortened. With the time bound
     * below, this keeps a claim call bounded even in front of a backlog of undeliverable rows; an empty batch
     * after the last round means the engine claims again at its next wake.
     */
    static final int MAX_CLAIM_ROUNDS = 10;

    /**
     * Claims in rounds under one token, in one transaction: a round that parked undeliverable rows leaves the
     * batch short, and the engine reads a short batch as "no more work", so the next round claims what is
     * missing. The rows a round claimed are leased, so a later round never takes a row behind them in their
     * aggregate; the batch is sorted by sequence.
     *
     * <p>One transaction, so that a round that fails (a statement timeout, a lost connection) leaves no row of
     * an earlier round leased under a token nobody received. No round starts once a quarter of the lease has
     * gone, so that an earlier round's rows cannot expire and come back in a later one.
     */
    @Override
    public ClaimBatch claim(ClaimRequest request) {
        if (settings.holdRowLocks()) {
            return claimHeld(request);
        }
        LeaseToken token = LeaseToken.random();
        boolean[] holdsBack = {false};
        boolean[] heldElsewhere = {false};
        long started = System.nanoTime();
        long roundsUntil = started + request.leaseLength().toNanos() / 4;
        List<ClaimedDelivery> deliveries = jdbi.inTransaction(handle -> {
            List<ClaimedDelivery> claimed = new ArrayList<>();
            Set<UUID> ids = new HashSet<>();
            int rounds = 0;
            boolean parked;
            do {
                Round round = claimRound(handle, request, token, request.maxRows() - claimed.size());
                for (ClaimedDelivery delivery : round.deliveries()) {
                    if (ids.add(delivery.eventId())) {
                        claimed.add(delivery);
                    }
                }
                // A round's rows say what stays behind only when that round came back short; a batch left short by
                // parking at claim may hold rows back behind a row an earlier, full round took.
                holdsBack[0] |= round.holdsBack() || round.parked();
                heldElsewhere[0] = round.heldElsewhere();
                parked = round.parked();
                rounds++;
            } while (parked && claimed.size() < request.maxRows() && rounds < MAX_CLAIM_ROUNDS
                    && System.nanoTime() < roundsUntil);
            return claimed;
        });
        if (deliveries.isEmpty() && heldElsewhere[0]) {
            return ClaimBatch.heldElsewhere(token);
        }
        deliveries.sort(Comparator.comparingLong(ClaimedDelivery::sequence));
        return new ClaimBatch(token, deliveries, holdsBack(request, deliveries.size(), holdsBack[0]));
    }

    /**
     * A claim that holds its rows by their locks: the same selection and rounds as a leased claim, in a
     * transaction left open for the outcomes. The lease length becomes the transaction's idle timeout, so a
     * relay that stops answering loses its rows after it; one that dies loses them when its connection closes.
     */
    private ClaimBatch claimHeld(ClaimRequest request) {
        held.values().removeIf(claim -> claim.abortIfAbandoned() || claim.ended());
        LeaseToken token = LeaseToken.random();
        Handle handle = jdbi.open();
        try {
            // The statement that takes the first locks also sets how long the transaction may go unanswered (HOLDS_FOR).
            handle.begin();
            List<ClaimedDelivery> claimed = new ArrayList<>();
            List<UUID> taken = new ArrayList<>();
            long roundsUntil = System.nanoTime() + request.leaseLength().toNanos() / 4;
            int rounds = 0;
            boolean parkedAny = false;
            boolean holdsBack = false;
            boolean heldElsewhere = false;
            boolean again;
            long lastSent;
            do {
                lastSent = System.nanoTime();
                Round round = lockRound(handle, request, token, request.maxRows() - claimed.size(), taken);
                parkedAny |= round == null || round.parked();
                if (round == null) {
                    // Rows this transaction had locked were parked in one of their own: start over without them.
                    handle.rollback();
                    handle.begin();
                    claimed.clear();
                    taken.clear();
                    holdsBack = false;
                    again = true;
                } else {
                    claimed.addAll(round.deliveries());
                    holdsBack |= round.holdsBack() || round.parked();
                    heldElsewhere = round.heldElsewhere();
                    again = round.again();
                }
                rounds++;
            } while (again && claimed.size() < request.maxRows() && rounds < MAX_CLAIM_ROUNDS
                    && System.nanoTime() < roundsUntil);
            if (request.ordering() == Ordering.PER_AGGREGATE) {
                backlogSeen = claimed.size() >= request.maxRows() || (claimed.isEmpty() && heldElsewhere);
            }
            if (claimed.isEmpty()) {
                endEmpty(handle, parkedAny); // rows parked at claim, or nothing at all
                return heldElsewhere ? ClaimBatch.heldElsewhere(token) : ClaimBatch.empty(token);
            }
            OptionalLong countdownFrom = countdownToHandOutWith(handle, request.leaseLength(), lastSent, parkedAny);
            if (countdownFrom.isEmpty()) {
                return ClaimBatch.empty(token);
            }
            claimed.sort(Comparator.comparingLong(ClaimedDelivery::sequence));
            held.put(token, new HeldClaim(handle, claimed.stream().map(ClaimedDelivery::eventId).toList(),
                    request.leaseLength(), countdownFrom.getAsLong(), System.nanoTime()));
            return new ClaimBatch(token, claimed, holdsBack(request, claimed.size(), holdsBack || parkedAny));
        } catch (RuntimeException | Error e) {
            try {
                handle.rollback();
            } catch (RuntimeException ignored) {
                // the failure may have taken the connection with it
            }
            try {
                handle.close();
            } catch (RuntimeException alsoFailed) {
                // an aborted connection fails Jdbi's check of its transaction state: the claim's own failure is the news
                e.addSuppressed(alsoFailed);
            }
            throw e;
        }
    }

    /**
     * Ends a claim that hands out nothing. Its parkings were committed in transactions of their own; while they
     * ran, PostgreSQL may have ended this idle one, which then held nothing worth committing.
     */
    private static void endEmpty(Handle handle, boolean parkedAny) {
        try {
            handle.commit();
        } catch (RuntimeException e) {
            if (!parkedAny || !HeldClaim.lost(e)) {
                throw e;
            }
        } finally {
            try {
                handle.close();
            } catch (RuntimeException ignored) {
                // the connection is gone already
            }
        }
    }

    /**
     * Whether the claim's transaction outlived the parking done in transactions of their own: while they ran
     * it sat idle, and PostgreSQL may have ended it (its rows then belong to whoever claims next). Restarts its
     * countdown when it did, so the lease runs from when the batch is handed out.
     */
    private boolean stillHolds(Handle handle, Duration leaseLength) {
        try {
            holdFor(handle, leaseLength);
            return true;
        } catch (RuntimeException e) {
            if (!HeldClaim.lost(e)) {
                throw e;
            }
            try {
                handle.close();
            } catch (RuntimeException ignored) {
                // the connection is gone already
            }
            return false;
        }
    }

    /**
     * When PostgreSQL's idle countdown for the claim about to be handed out began, at the earliest: when its last
     * statement ({@code lastSent}) was sent. A result that took half the lease or more to come back (a pause, a stalled
     * network) may have come from a session ended since, whose rows are someone else's, so the claim asks first, and
     * fails when the session is gone. Parking in transactions of their own may outlast the lease legitimately: then
     * the claim always asks, and a session gone means an empty batch (empty here), not a failure. A question whose own
     * answer came late lets the transaction go rather than ask again.
     */
    private OptionalLong countdownToHandOutWith(Handle handle, Duration leaseLength, long lastSent, boolean parkedAny) {
        long halfLease = leaseLength.toNanos() / 2;
        long answered = System.nanoTime() - lastSent;
        if (!parkedAny && answered < halfLease) {
            return OptionalLong.of(lastSent);
        }
        long confirmSent = System.nanoTime();
        if (parkedAny) {
            if (!stillHolds(handle, leaseLength)) {
                return OptionalLong.empty();
            }
        } else {
            confirmHolds(handle, leaseLength, answered);
        }
        long confirmed = System.nanoTime() - confirmSent;
        if (confirmed < halfLease) {
            return OptionalLong.of(confirmSent);
        }
        abandon(handle);
        if (parkedAny) {
            return OptionalLong.empty();
        }
        throw new IllegalStateException("the claim's transaction may have ended before its rows were handed out"
                + " (its last statement was answered after " + TimeUnit.NANOSECONDS.toMillis(answered)
                + " ms, the question whether it still holds after " + TimeUnit.NANOSECONDS.toMillis(confirmed)
                + " ms, the lease is " + leaseLength.toMillis() + " ms): nothing was handed out");
    }

    /** Rolls the claim's transaction back and closes its connection, quietly: it may be gone already. */
    private static void abandon(Handle handle) {
        try {
            handle.rollback();
        } catch (RuntimeException ignored) {
            // the session may have ended
        }
        try {
            handle.close();
        } catch (RuntimeException ignored) {
            // the connection is gone already
        }
    }

    /**
     * Fails the claim when its transaction ended while the answer to its last statement was on its way: that answer
     * may list rows that are someone else's by now (PostgresLateLockResultTurnEndReviewTest).
     */
    private void confirmHolds(Handle handle, Duration leaseLength, long answeredNanos) {
        try {
            holdFor(handle, leaseLength);
        } catch (RuntimeException e) {
            if (!HeldClaim.lost(e)) {
                throw e;
            }
            throw new IllegalStateException("the claim's transaction ended before its rows were handed out (its last"
                    + " statement was answered after " + TimeUnit.NANOSECONDS.toMillis(answeredNanos) + " ms, the lease"
                    + " is " + leaseLength.toMillis() + " ms): nothing was handed out", e);
        }
    }

    /**
     * Starts (or restarts) the countdowns after which PostgreSQL ends the held claim's transaction: idle, or waiting
     * on a relay that stopped reading its results.
     */
    private void holdFor(Handle handle, Duration leaseLength) {
        plain(handle.createQuery(sql.holdFor)).bind("millis", holdMillis(leaseLength)).mapTo(String.class).one();
    }

    /** The lease length as the timeouts of a held claim's transaction take it. */
    private static String holdMillis(Duration leaseLength) {
        return Long.toString(Math.max(1, Math.min(Integer.MAX_VALUE, leaseLength.toMillis())));
    }

    /**
     * One round of a held claim. Unordered, it locks and reads the first claimable rows in one statement (skipping
     * those {@code taken} by earlier rounds, which this transaction's own locks would not skip). Ordered, it chooses the claimable rows
     * without locking any (leaving out rows running transactions hold, and the later rows of their
     * aggregates), then locks and reads the chosen ones; a chosen row another claimer took in between cuts its
     * aggregate there, so a later row is never kept without its earlier siblings.
     */
    private Round lockRound(Handle handle, ClaimRequest request, LeaseToken token, int maxRows, List<UUID> taken) {
        boolean ordered = request.ordering() == Ordering.PER_AGGREGATE;
        if (ordered) {
            return lockOrderedRound(handle, request, token, maxRows, taken);
        }
        List<Claimed> claimed = indexedQuery(handle, sql.lockUnordered)
                .bind("maxRows", maxRows)
                .bind("millis", holdMillis(request.leaseLength()))
                .bindArray("taken", UUID.class, taken)
                .execute(IndexPlans.rows())
                .map((rs, ctx) -> claimed(rs, token, false)).list();
        if (claimed.isEmpty()) {
            return new Round(List.of(), false);
        }
        claimed.forEach(row -> taken.add(row.eventId()));
        List<Claimed> undeliverable = claimed.stream().filter(c -> c.undeliverable() != null).toList();
        if (undeliverable.isEmpty()) {
            return new Round(claimed.stream().map(Claimed::delivery).toList(), false);
        }
        // Parked in this transaction, they would show as parked only when the batch ends; this transaction's
        // locks keep every other one from parking them. The caller rolls back, they are parked, and it
        // claims again.
        handle.rollback();
        handle.begin();
        jdbi.useHandle(own -> parkHeld(own, undeliverable));
        return null;
    }

    /**
     * An ordered round of a held claim: chooses the claimable rows without locking any, then locks and reads the
     * chosen ones (see {@link #lockRound}).
     */
    private Round lockOrderedRound(Handle handle, ClaimRequest request, LeaseToken token, int maxRows, List<UUID> taken) {
        Choice choice = Choice.take(orderedChoice, request.leaseLength(), handle, sql, backlogSeen);
        Round round;
        try {
            round = chooseAndLock(handle, request, token, maxRows, taken, choice);
        } catch (RuntimeException | Error failed) {
            choice.endAfter(failed);
            throw failed;
        }
        choice.end();
        return round;
    }

    /** The body of {@link #lockOrderedRound}, in this claim's turn to choose (given up before parking at claim). */
    private Round chooseAndLock(Handle handle, ClaimRequest request, LeaseToken token, int maxRows, List<UUID> taken,
                                Choice choice) {
        List<Claimed> chosen = indexedQuery(handle, sql.chooseOrdered)
                .bind("maxRows", maxRows)
                .bind("millis", holdMillis(request.leaseLength()))
                .bind("parkedHolds", request.parkingPolicy() == ParkingPolicy.HOLD_AGGREGATE)
                .bind("window", OutboxSql.claimWindow(maxRows))
                .bindArray("taken", UUID.class, taken)
                .execute(IndexPlans.rows())
                .map((rs, ctx) -> claimed(rs, token, true))
                .collect(Collectors.toCollection(ArrayList::new));
        if (chosen.removeIf(Claimed::marker)) {
            return Round.HELD_ELSEWHERE;
        }
        if (chosen.isEmpty()) {
            return new Round(List.of(), false);
        }
        List<Claimed> undeliverable = chosen.stream().filter(c -> c.undeliverable() != null).toList();
        List<Claimed> toLock = chosen;
        List<Claimed> inOrder = chosen;
        if (!undeliverable.isEmpty()) {
            // Parked before anything is locked, in a transaction of their own, so the parking shows at once and
            // not when this batch's outcomes do; under HOLD_AGGREGATE the rows behind them are not taken. It may
            // take any time (a second connection, triggers): the other claims of the store do not wait for it, and
            // may then take chosen rows first, which the lock below sees.
            choice.end();
            Set<UUID> parkedIds = jdbi.withHandle(own -> parkHeld(own, undeliverable));
            toLock = Sorted.of(chosen, request.parkingPolicy() == ParkingPolicy.HOLD_AGGREGATE).deliverable();
            // One the parking skipped (another transaction locks it: HELD misses a savepoint's or two
            // share-lockers' lock) is neither parked nor delivered: it stays in the order check, unlocked,
            // so it cuts its aggregate there, whatever the parking policy.
            Set<UUID> lockable = toLock.stream().map(Claimed::eventId).collect(Collectors.toSet());
            inOrder = chosen.stream().filter(c -> lockable.contains(c.eventId())
                    || (c.undeliverable() != null && !parkedIds.contains(c.eventId()))).toList();
        }
        Map<UUID, Integer> locked = new HashMap<>();
        if (!toLock.isEmpty()) {
            // The turn among processes ends in the same round trip, once the chosen rows are locked.
            boolean endsTurn = choice.holdsTurnAmongProcesses();
            plain(handle.createQuery(endsTurn ? sql.lockChosenEndingTurn : sql.lockChosen))
                    .bindArray("ids", UUID.class, toLock.stream().map(Claimed::eventId).toList())
                    .bind("millis", holdMillis(request.leaseLength()))
                    .map((rs, ctx) -> new LockedRow(rs.getObject("event_id", UUID.class), rs.getInt("attempts")))
                    .forEach(row -> {
                        if (row.eventId() != null) {
                            locked.put(row.eventId(), row.attempts());
                        }
                    });
            if (endsTurn) {
                choice.turnEndedWithTheLock();
            }
        }
        taken.addAll(locked.keySet());
        // Another claimer locked some of the chosen rows first: choose again, around the rows it now holds.
        boolean parked = !undeliverable.isEmpty();
        List<ClaimedDelivery> kept = keptInOrder(inOrder, locked);
        Round round = new Round(kept, parked, parked || locked.size() < toLock.size()).holding(chosen);
        // Rows cut behind a chosen row another claimer took stay locked by this claim until it ends, and a chosen
        // row another claimer took may sit behind a row this claim keeps: either way rows wait behind a batch.
        return kept.size() < locked.size() || locked.size() < toLock.size()
                ? new Round(kept, parked, round.again(), true) : round;
    }

    /**
     * This claim's turn to choose, if it got it: first among the claims of this store, then, after a backlog
     * ({@code backlogSeen}), among those of every process on the table (a session advisory lock on the claim's
     * connection, waited for in the lock's queue under a lock_timeout). A claim waits for its turn at most a tenth of
     * its lease (at most 500 ms) in all: the one choosing may be stuck on a connection that died silently, and
     * meanwhile this claim's own transaction runs down its lease. Without a turn it chooses anyway: it may lose rows
     * to another claimer and choose again, never take a row twice. The turn was first tried every 2 ms instead: with
     * four relay processes the waiting claims' tries took CPU from the one choosing, and the turn went to whichever
     * try came first, not to the claim that had waited longest.
     *
     * <p>A lock_timeout that runs out fails the statement, so the turn is taken in a savepoint: rolled back to, it
     * keeps the rows earlier rounds of the claim locked and the claim's transaction, whose server session (behind
     * PgBouncer in transaction mode) is the one to ask whether the lock came as the timeout fired.
     *
     * <p>The advisory lock belongs to the session, not the transaction: it must be released before the connection
     * goes back to the pool, or every other claim would wait out its bound. It is taken and released in the claim's
     * transaction, so that behind PgBouncer in transaction mode both reach the same server session. When the release
     * fails (the claim's transaction failed: a statement timeout, say), the connection is aborted: the session's end
     * releases the turn, and the claim fails (a rollback would let PgBouncer hand the session, turn and all, to
     * another client).
     */
    private static final class Choice {
        private static final String TURN_SAVEPOINT = OutboxSql.CHOICE_TURN_SAVEPOINT;
        private static final String LOCK_TIMEOUT = "55P03";

        private final ReentrantLock lock;
        private final Handle handle;
        private final OutboxSql sql;
        private final String holdMillis;
        private boolean held;
        private boolean turn;

        private Choice(ReentrantLock lock, boolean held, Handle handle, OutboxSql sql, String holdMillis) {
            this.lock = lock;
            this.held = held;
            this.handle = handle;
            this.sql = sql;
            this.holdMillis = holdMillis;
        }

        static Choice take(ReentrantLock lock, Duration leaseLength, Handle handle, OutboxSql sql,
                           boolean acrossProcesses) {
            long waitMillis = Math.max(1, Math.min(500, leaseLength.toMillis() / 10));
            long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMillis);
            boolean held;
            try {
                held = lock.tryLock(waitMillis, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return new Choice(lock, false, handle, sql, holdMillis(leaseLength));
            }
            Choice choice = new Choice(lock, held, handle, sql, holdMillis(leaseLength));
            if (acrossProcesses) {
                choice.takeTurn(Math.max(1, TimeUnit.NANOSECONDS.toMillis(until - System.nanoTime())));
            }
            return choice;
        }

        private void takeTurn(long waitMillis) {
            try {
                turn = plain(handle.createQuery(sql.tryChoiceTurn)).bind("millis", holdMillis).mapTo(Boolean.class).one();
                if (turn) {
                    return;
                }
                // Always in a savepoint, so that the transaction, and with it the server session behind PgBouncer in
                // transaction mode, lasts until the claim knows whether it holds the turn.
                handle.savepoint(TURN_SAVEPOINT);
                try {
                    plain(handle.createQuery(sql.takeChoiceTurn)).bind("millis", holdMillis)
                            .bind("waitMillis", Long.toString(waitMillis)).mapTo(Boolean.class).one();
                    turn = true;
                    handle.release(TURN_SAVEPOINT);
                } catch (RuntimeException e) {
                    if (turn || !ranOut(e)) {
                        throw e;
                    }
                    // Waited its bound: the claim chooses without the turn, unless the lock came as it gave up.
                    handle.rollbackToSavepoint(TURN_SAVEPOINT);
                    turn = plain(handle.createQuery(sql.holdsChoiceTurn)).bind("millis", holdMillis)
                            .mapTo(Boolean.class).one();
                    // Released, so that the rows this claim locks next are the transaction's own, not a subtransaction's
                    // (HELD sees top-level transactions only). Jdbi forgot the savepoint on the rollback to it.
                    plain(handle.createUpdate(sql.releaseChoiceTurnSavepoint)).execute();
                }
            } catch (RuntimeException | Error e) {
                // The session may hold the turn, granted before the failure: only its end surely gives it back.
                turn = false;
                abort(handle, e);
                end();
                throw e;
            }
        }

        private static boolean ranOut(Throwable failure) {
            return HeldClaim.hasSqlState(failure, LOCK_TIMEOUT::equals);
        }

        boolean holdsTurnAmongProcesses() {
            return turn;
        }

        /** The statement that locked the chosen rows gave the turn among processes back too. */
        void turnEndedWithTheLock() {
            turn = false;
        }

        /** Ends both turns; throws if the turn among processes could not be given back (the claim must fail). */
        void end() {
            try {
                if (turn) {
                    turn = false;
                    endTurn();
                }
            } finally {
                if (held) {
                    held = false;
                    lock.unlock();
                }
            }
        }

        /** Ends both turns after the claim failed with {@code failure}, which keeps any failure of this. */
        void endAfter(Throwable failure) {
            try {
                end();
            } catch (RuntimeException alsoFailed) {
                failure.addSuppressed(alsoFailed);
            }
        }

        private void endTurn() {
            try {
                plain(handle.createQuery(sql.endChoiceTurn)).mapTo(Boolean.class).one();
            } catch (RuntimeException failed) {
                abort(handle, failed);
                throw failed;
            }
        }

        /** Ends the claim's session, and with it any turn it holds; {@code failure} keeps any failure of this. */
        private static void abort(Handle handle, Throwable failure) {
            try {
                handle.getConnection().abort(Runnable::run);
            } catch (SQLException | RuntimeException gone) {
                failure.addSuppressed(gone);
            }
        }
    }

    /** A row lockChosen locked (event id null in the one row lockChosenEndingTurn returns when it locked none). */
    private record LockedRow(UUID eventId, int attempts) {
    }

    /**
     * Claimed rows sorted by the parking rule: those to deliver, and those behind an undeliverable row of their
     * aggregate when parked rows hold their aggregate. The undeliverable rows themselves are in neither list.
     */
    private record Sorted(List<Claimed> deliverable, List<UUID> heldBehind) {

        static Sorted of(List<Claimed> rows, boolean hold) {
            Set<AggregateKey> held = new HashSet<>();
            List<Claimed> deliverable = new ArrayList<>();
            List<UUID> heldBehind = new ArrayList<>();
            for (Claimed row : rows) {
                if (row.undeliverable() != null) {
                    held.add(row.aggregate());
                } else if (hold && held.contains(row.aggregate())) {
                    heldBehind.add(row.eventId());
                } else {
                    deliverable.add(row);
                }
            }
            return new Sorted(deliverable, heldBehind);
        }
    }

    /** Parks the rows nobody else locks; answers those it parked. */
    private Set<UUID> parkHeld(Handle handle, List<Claimed> undeliverable) {
        return indexedQuery(handle, sql.parkHeld)
                .bindArray("ids", UUID.class, undeliverable.stream().map(Claimed::eventId).toList())
                .bindArray("reasons", String.class, undeliverable.stream().map(c -> storable(c.undeliverable())).toList())
                .execute(IndexPlans.rows())
                .mapTo(UUID.class).set();
    }

    /**
     * The chosen rows that keep per-aggregate order once locked: in each aggregate, those before the first
     * chosen row that could not be locked (another claimer took it, or it was sent or rescheduled, after the
     * choice), each with its attempts as the lock found them. The rows after it stay locked until the claim
     * ends but are not delivered: their earlier sibling is elsewhere.
     */
    private static List<ClaimedDelivery> keptInOrder(List<Claimed> chosen, Map<UUID, Integer> lockedAttempts) {
        Set<AggregateKey> cut = new HashSet<>();
        List<ClaimedDelivery> kept = new ArrayList<>();
        for (Claimed row : chosen) {
            Integer attempts = lockedAttempts.get(row.eventId());
            if (attempts == null) {
                cut.add(row.aggregate());
            } else if (!cut.contains(row.aggregate())) {
                ClaimedDelivery delivery = row.delivery();
                kept.add(attempts == delivery.attempts() ? delivery : new ClaimedDelivery(delivery.sequence(),
                        delivery.event(), attempts, delivery.lease(), delivery.createdAt()));
            }
        }
        return kept;
    }

    /**
     * Whether a batch of {@code size} rows holds rows back (ClaimBatch holdsBack), given that a round saw a row behind
     * or parked rows: only an ordered, non-empty batch short of the batch size, as ClaimRule.holdsBack states it.
     */
    private static boolean holdsBack(ClaimRequest request, int size, boolean sawBehind) {
        return sawBehind && request.ordering() == Ordering.PER_AGGREGATE && size > 0 && size < request.maxRows();
    }

    /**
     * What one claim statement gave: its deliveries, and whether it parked rows at claim; {@code heldElsewhere}: it
     * took nothing and said every due row was held elsewhere (ClaimBatch heldElsewhere).
     */
    private record Round(List<ClaimedDelivery> deliveries, boolean parked, boolean again, boolean holdsBack,
                         boolean heldElsewhere) {
        static final Round HELD_ELSEWHERE = new Round(List.of(), false, false, false, true);

        Round(List<ClaimedDelivery> deliveries, boolean parked) {
            this(deliveries, parked, parked);
        }

        Round(List<ClaimedDelivery> deliveries, boolean parked, boolean again) {
            this(deliveries, parked, again, false);
        }

        Round(List<ClaimedDelivery> deliveries, boolean parked, boolean again, boolean holdsBack) {
            this(deliveries, parked, again, holdsBack, false);
        }

        /** This round, noting that rows of the statement said the next row of their aggregate stays behind. */
        Round holding(List<Claimed> rows) {
            boolean behind = rows.stream().anyMatch(Claimed::behind);
            return behind == holdsBack ? this : new Round(deliveries, parked, again, behind);
        }
    }

    private Round claimRound(Handle handle, ClaimRequest request, LeaseToken token, int maxRows) {
        boolean ordered = request.ordering() == Ordering.PER_AGGREGATE;
        var query = indexedQuery(handle, ordered ? sql.claimOrdered : sql.claimUnordered)
                .bind("maxRows", maxRows)
                .bind("owner", request.owner())
                .bind("token", token.value())
                .bind("leaseMicros", micros(request.leaseLength()));
        if (ordered) {
            query.bind("parkedHolds", request.parkingPolicy() == ParkingPolicy.HOLD_AGGREGATE)
                    .bind("window", OutboxSql.claimWindow(maxRows));
        }
        List<Claimed> claimed = query.execute(IndexPlans.rows()).map((rs, ctx) -> claimed(rs, token, ordered))
                .collect(Collectors.toCollection(ArrayList::new));
        if (claimed.removeIf(Claimed::marker)) {
            return Round.HELD_ELSEWHERE;
        }
        return deliverable(handle, token, claimed, ordered && request.parkingPolicy() == ParkingPolicy.HOLD_AGGREGATE)
                .holding(claimed);
    }

    /**
     * A row's aggregate as the table's collation tells them apart (OutboxSql AGGREGATE_KEYS); only ordered claims read
     * it, and only they compare it.
     */
    private record AggregateKey(long type, long id) {
    }

    /**
     * A claimed row: a delivery, or the reason it can never be one; {@code behind}: the next unsent row of its
     * aggregate stays outside the batch (ordered claims only).
     */
    private record Claimed(UUID eventId, AggregateKey aggregate, ClaimedDelivery delivery, String undeliverable,
                           boolean behind) {
        /** The row an empty ordered claim returns when every due row was held elsewhere (OutboxSql HELD_ELSEWHERE). */
        static final Claimed MARKER = new Claimed(null, null, null, null, false);

        boolean marker() {
            return eventId == null;
        }
    }

    private Claimed claimed(ResultSet rs, LeaseToken token, boolean ordered) throws SQLException {
        UUID eventId = rs.getObject("event_id", UUID.class);
        if (eventId == null) {
            return Claimed.MARKER;
        }
        boolean behind = ordered && rs.getBoolean("behind");
        AggregateKey aggregate = ordered
                ? new AggregateKey(rs.getLong("aggregate_type_key"), rs.getLong("aggregate_id_key")) : null;
        HeaderColumn headers = HeaderColumn.read(rs);
        String problem = headers.problem();
        // Only a limit the relay was given: with the writer's default it would park what a writer allowed more.
        if (problem == null && settings.claimPayloadLimit().isPresent()) {
            int limit = settings.claimPayloadLimit().getAsInt();
            int size = rs.getBytes("payload").length;
            if (size > limit) {
                problem = "payload is " + size + " bytes, more than outbox.maxPayloadBytes (" + limit
                        + "); raise outbox.maxPayloadBytes (and the broker's limit) or make the event smaller, then replay it";
            }
        }
        if (problem == null) {
            try {
                return new Claimed(eventId, aggregate, new ClaimedDelivery(rs.getLong("seq"), event(rs, headers),
                        rs.getInt("attempts"), token, instant(rs, "created_at")), null, behind);
            } catch (IllegalArgumentException notAnEvent) {
                // Values the table allows and OutboxEvent refuses (a blank event type, aggregate, destination or
                // header name): thrown here, after the claim committed its lease, it would fail every claim.
                problem = notAnEvent(notAnEvent);
            }
        }
        return new Claimed(eventId, aggregate, null, problem, behind);
    }

    /** The reason a row OutboxEvent refused is parked with: the column, OutboxEvent's message, and the fix. */
    private static String notAnEvent(IllegalArgumentException refusal) {
        String message = String.valueOf(refusal.getMessage());
        String replay = " and replay the event";
        if (message.startsWith("aggregateType")) {
            return "aggregate_type: " + message + "; write a non-blank aggregate_type" + replay;
        }
        if (message.startsWith("aggregateId")) {
            return "aggregate_id: " + message + "; write a non-blank aggregate_id" + replay;
        }
        if (message.startsWith("eventType")) {
            return "event_type: " + message + "; write a non-blank event_type" + replay;
        }
        if (message.startsWith("destination")) {
            return "destination: " + message + "; write NULL (the configured routing) or a non-blank destination"
                    + replay;
        }
        if (message.startsWith("header")) {
            return "headers: " + message + "; write the headers column as {\"name\": \"value\", ...} with non-blank"
                    + " names" + replay;
        }
        return "the row is not a valid event: " + message + "; correct the row" + replay;
    }

    /**
     * Parks the rows no broker can take (headers that are not an object of strings, a payload over the limit
     * the relay was given,
     * values OutboxEvent refuses such as a blank event type or header name) under the claim's lease, so they neither fail every claim nor come back forever. With hold-aggregate, the
     * later rows of their aggregates in the batch go back unclaimed: the parked row now holds them.
     */
    private Round deliverable(Handle handle, LeaseToken token, List<Claimed> claimed, boolean hold) {
        List<Claimed> undeliverable = claimed.stream().filter(c -> c.undeliverable() != null).toList();
        if (undeliverable.isEmpty()) {
            return new Round(claimed.stream().map(Claimed::delivery).toList(), false);
        }
        plain(handle.createUpdate(sql.park)).bind("token", token.value())
                .bindArray("ids", UUID.class, undeliverable.stream().map(Claimed::eventId).toList())
                .bindArray("reasons", String.class, undeliverable.stream().map(c -> storable(c.undeliverable())).toList())
                .execute();
        Sorted sorted = Sorted.of(claimed, hold);
        if (!sorted.heldBehind().isEmpty()) {
            plain(handle.createUpdate(sql.release)).bind("token", token.value())
                    .bindArray("ids", UUID.class, sorted.heldBehind()).execute();
        }
        return new Round(sorted.deliverable().stream().map(Claimed::delivery).toList(), true);
    }

    /**
     * The headers column as a row's names and values, or {@code problem}: why it cannot become headers. The writer
     * only ever writes a flat object of strings; other JSON gets here from rows written by hand. Numbers and
     * booleans are read as their text, as {@code jsonb_each_text} gives them; a JSON null has no string to give.
     * Read from jsonb's own text, whose numbers and nested values PostgreSQL has already normalised; names in
     * code-point order. Headers over {@link OutboxSql#HEADERS_MAX_BYTES} come without their text.
     */
    record HeaderColumn(String[] names, String[] values, String problem) {

        private static final String FIX = "; write the headers column as {\"name\": \"value\", ...} and replay the event";

        static HeaderColumn read(ResultSet rs) throws SQLException {
            String text = rs.getString("headers");
            if (text == null) {
                return new HeaderColumn(null, null, "headers is " + rs.getLong("headers_bytes") + " bytes, more than "
                        + OutboxSql.HEADERS_MAX_BYTES + " (no broker takes that many); write smaller headers and replay"
                        + " the event");
            }
            return of(text);
        }

        static HeaderColumn of(String jsonb) {
            String type = Json.type(jsonb);
            if (!"object".equals(type)) {
                return new HeaderColumn(null, null,
                        "headers is a JSON " + type + ", not an object of strings: " + firstCodePoints(jsonb, 200) + FIX);
            }
            Map<String, String> members = Json.parseMembersAsText(jsonb);
            String[] names = members.keySet().toArray(String[]::new);
            // Code-point order, as a C collation sorts, for the reasons that name a header (not String's UTF-16 order).
            Arrays.sort(names, HeaderColumn::byCodePoint);
            String[] values = new String[names.length];
            for (int i = 0; i < names.length; i++) {
                values[i] = members.get(names[i]);
                if (values[i] == null) {
                    return new HeaderColumn(null, null, "header '" + names[i] + "' is JSON null, not a string" + FIX);
                }
            }
            return new HeaderColumn(names, values, null);
        }

        private static int byCodePoint(String a, String b) {
            int i = 0;
            int j = 0;
            while (i < a.length() && j < b.length()) {
                int ca = a.codePointAt(i);
                int cb = b.codePointAt(j);
                if (ca != cb) {
                    return Integer.compare(ca, cb);
                }
                i += Character.charCount(ca);
                j += Character.charCount(cb);
            }
            return Boolean.compare(i < a.length(), j < b.length());
        }

        /** As SQL's {@code left(text, n)}: characters, not UTF-16 units. */
        private static String firstCodePoints(String text, int n) {
            return text.codePointCount(0, text.length()) <= n ? text : text.substring(0, text.offsetByCodePoints(0, n));
        }
    }

    @Override
    public int markSent(LeaseToken lease, Collection<UUID> eventIds) {
        Objects.requireNonNull(lease, "lease");
        if (eventIds.isEmpty()) {
            return 0;
        }
        if (settings.holdRowLocks()) {
            return resolveHeld(lease, eventIds, (handle, mine) -> plain(handle.createUpdate(
                    settings.deleteOnSend() ? sql.deleteSentHeld : sql.markSentHeld))
                    .bindArray("ids", UUID.class, mine).execute());
        }
        return indexedUpdate(settings.deleteOnSend() ? sql.deleteSent : sql.markSent, statement -> statement
                .bind("token", lease.value())
                .bindArray("ids", UUID.class, eventIds));
    }

    @Override
    public int reschedule(LeaseToken lease, List<Reschedule> retries) {
        Objects.requireNonNull(lease, "lease");
        if (retries.isEmpty()) {
            return 0;
        }
        if (settings.holdRowLocks()) {
            Map<UUID, Reschedule> byId = new LinkedHashMap<>();
            retries.forEach(retry -> byId.putIfAbsent(retry.eventId(), retry));
            return resolveHeld(lease, byId.keySet(), (handle, mine) -> {
                List<Reschedule> chosen = mine.stream().map(byId::get).toList();
                return plain(handle.createUpdate(sql.rescheduleHeld))
                        .bindArray("ids", UUID.class, chosen.stream().map(Reschedule::eventId).toList())
                        .bindArray("delays", Long.class, chosen.stream().map(r -> micros(r.delay())).toList())
                        .bindArray("reasons", String.class, chosen.stream().map(r -> storable(r.reason())).toList())
                        .execute();
            });
        }
        List<UUID> ids = new ArrayList<>();
        List<Long> delays = new ArrayList<>();
        List<String> reasons = new ArrayList<>();
        for (Reschedule retry : retries) {
            ids.add(retry.eventId());
            delays.add(micros(retry.delay()));
            reasons.add(storable(retry.reason()));
        }
        return indexedUpdate(sql.reschedule, statement -> statement
                .bind("token", lease.value())
                .bindArray("ids", UUID.class, ids)
                .bindArray("delays", Long.class, delays)
                .bindArray("reasons", String.class, reasons));
    }

    @Override
    public int park(LeaseToken lease, List<Park> parkings) {
        Objects.requireNonNull(lease, "lease");
        if (parkings.isEmpty()) {
            return 0;
        }
        if (settings.holdRowLocks()) {
            Map<UUID, Park> byId = new LinkedHashMap<>();
            parkings.forEach(parking -> byId.putIfAbsent(parking.eventId(), parking));
            return resolveHeld(lease, byId.keySet(), (handle, mine) -> {
                List<Park> chosen = mine.stream().map(byId::get).toList();
                return plain(handle.createQuery(sql.parkHeld))
                        .bindArray("ids", UUID.class, chosen.stream().map(Park::eventId).toList())
                        .bindArray("reasons", String.class, chosen.stream().map(p -> storable(p.reason())).toList())
                        .mapTo(UUID.class).list().size();
            });
        }
        List<UUID> ids = new ArrayList<>();
        List<String> reasons = new ArrayList<>();
        for (Park parking : parkings) {
            ids.add(parking.eventId());
            reasons.add(storable(parking.reason()));
        }
        return indexedUpdate(sql.park, statement -> statement
                .bind("token", lease.value())
                .bindArray("ids", UUID.class, ids)
                .bindArray("reasons", String.class, reasons));
    }

    @Override
    public int release(LeaseToken lease, Collection<UUID> eventIds) {
        Objects.requireNonNull(lease, "lease");
        if (eventIds.isEmpty()) {
            return 0;
        }
        if (settings.holdRowLocks()) {
            // The rows stay as they are (their lock ends with the claim), but a statement still goes out: it fails
            // when PostgreSQL has ended the claim, and it restarts the idle countdown as the store's own deadline is.
            return resolveHeld(lease, eventIds, (handle, mine) -> plain(handle.createQuery("SELECT 1"))
                    .mapTo(Integer.class).one());
        }
        return indexedUpdate(sql.release, statement -> statement
                .bind("token", lease.value())
                .bindArray("ids", UUID.class, eventIds));
    }

    @Override
    public int renew(LeaseToken lease, Duration leaseLength) {
        Objects.requireNonNull(lease, "lease");
        StoreArguments.leaseLength(leaseLength);
        if (settings.holdRowLocks()) {
            HeldClaim claim = held.get(lease);
            if (claim == null) {
                return 0;
            }
            int owned = claim.renew(leaseLength, () -> holdFor(claim.handle(), leaseLength));
            if (claim.ended()) {
                held.remove(lease, claim);
            }
            return owned;
        }
        return indexedUpdate(sql.renew, statement -> statement
                .bind("token", lease.value())
                .bind("leaseMicros", micros(leaseLength)));
    }

    /** An outcome for the rows of a held claim; 0 for a claim this store does not hold (any more). */
    private int resolveHeld(LeaseToken lease, Collection<UUID> eventIds, HeldWrite write) {
        HeldClaim claim = held.get(lease);
        if (claim == null) {
            return 0;
        }
        try {
            return claim.resolve(eventIds, mine -> write.apply(claim.handle(), mine));
        } finally {
            if (claim.ended()) {
                held.remove(lease, claim);
            }
        }
    }

    @FunctionalInterface
    private interface HeldWrite {
        int apply(Handle handle, List<UUID> eventIds);
    }

    /**
     * Rows held by another transaction's row locks are left out: when such a claim ends is not on the table.
     * This store's own held claims count with the time until the database would end them.
     */
    @Override
    public Optional<Duration> timeUntilNextDue() {
        Optional<Duration> onTable = jdbi.withHandle(handle -> indexedQuery(handle, sql.timeUntilNextDue)
                .execute(IndexPlans.rows())
                .map((rs, ctx) -> {
                    long micros = rs.getLong("micros");
                    if (rs.wasNull()) {
                        return Optional.<Duration>empty();
                    }
                    return Optional.of(micros <= 0 ? Duration.ZERO : Duration.ofNanos(micros * 1000));
                })
                .one());
        Optional<Duration> ownClaims = held.values().stream().filter(claim -> !claim.ended())
                .map(HeldClaim::remaining).min(Comparator.naturalOrder());
        if (onTable.isEmpty()) {
            return ownClaims;
        }
        return ownClaims.filter(own -> own.compareTo(onTable.get()) < 0).or(() -> onTable);
    }

    @Override
    public int purgeSent(Duration retention, int maxRows) {
        StoreArguments.purge(retention, maxRows);
        return indexedUpdate(sql.purgeSent, statement -> statement
                .bind("retentionMicros", micros(retention))
                .bind("maxRows", maxRows));
    }

    @Override
    public BacklogStats stats() {
        return jdbi.withHandle(handle -> plain(handle.createQuery(sql.stats))
                .map((rs, ctx) -> {
                    long oldest = rs.getLong("oldest_micros");
                    Optional<Duration> age = rs.wasNull()
                            ? Optional.empty()
                            : Optional.of(Duration.ofNanos(Math.max(0, oldest) * 1000));
                    return new BacklogStats(rs.getLong("pending"), rs.getLong("leased"), rs.getLong("parked"), age);
                })
                .one());
    }

    @Override
    public List<ParkedEvent> parked(ReplaySelector selector, int limit) {
        return parked(selector, limit, Integer.MAX_VALUE);
    }

    @Override
    public List<ParkedEvent> parked(ReplaySelector selector, int limit, int maxPayloadBytes) {
        Objects.requireNonNull(selector, "selector");
        StoreArguments.atLeastOne("limit", limit);
        ParkedEvent.requirePayloadCap(maxPayloadBytes);
        return jdbi.withHandle(handle -> {
            var query = plain(handle.createQuery(sql.parkedCappedSelect.replace("<selector>", condition(selector))))
                    .bind("limit", limit).bind("maxPayloadBytes", maxPayloadBytes);
            bindSelector(query, selector);
            return query.map((rs, ctx) -> new ParkedEvent(rs.getLong("seq"), listedEvent(rs), rs.getInt("attempts"),
                    rs.getString("last_error"), instant(rs, "created_at"), rs.getInt("payload_bytes"))).list();
        });
    }

    @Override
    public int replay(ReplaySelector selector) {
        Objects.requireNonNull(selector, "selector");
        return update(sql.replay.replace("<selector>", condition(selector)), statement -> {
            bindSelector(statement, selector);
            return statement;
        });
    }

    private int update(String statementSql, Function<Update, Update> binder) {
        return jdbi.withHandle(handle -> binder.apply(plain(handle.createUpdate(statementSql))).execute());
    }

    /** A delivery statement on the outbox, kept to its indexes ({@link IndexPlans}); run it with {@link IndexPlans#rows}. */
    private Query indexedQuery(Handle handle, String statementSql) {
        return plain(handle.createQuery(indexed(statementSql)));
    }

    /** The statement's text with the planner settings ahead of it, made once per statement. */
    private String indexed(String statementSql) {
        return indexed.computeIfAbsent(statementSql, IndexPlans::under);
    }

    /** A delivery statement on the outbox, kept to its indexes ({@link IndexPlans}). */
    private int indexedUpdate(String statementSql, Function<Update, Update> binder) {
        return jdbi.withHandle(handle -> binder.apply(plain(handle.createUpdate(indexed(statementSql))))
                .execute(IndexPlans.updateCount()));
    }

    private static String condition(ReplaySelector selector) {
        if (selector instanceof ReplaySelector.ByEventIds) {
            return "event_id = ANY(:ids)";
        }
        if (selector instanceof ReplaySelector.ByAggregate) {
            return "aggregate_type = :aggregateType AND aggregate_id = :aggregateId";
        }
        if (selector instanceof ReplaySelector.AllParked) {
            return "TRUE";
        }
        throw new IllegalArgumentException("unknown replay selector: " + selector);
    }

    private static void bindSelector(SqlStatement<?> statement, ReplaySelector selector) {
        if (selector instanceof ReplaySelector.ByEventIds byIds) {
            statement.bindArray("ids", UUID.class, byIds.eventIds());
        } else if (selector instanceof ReplaySelector.ByAggregate byAggregate) {
            statement.bind("aggregateType", byAggregate.aggregate().type());
            statement.bind("aggregateId", byAggregate.aggregate().id());
        }
    }

    // The statements are complete SQL; Jdbi's template engine would only misread '<' comparisons.
    private static <S extends SqlStatement<S>> S plain(S statement) {
        return statement.setTemplateEngine(TemplateEngine.NOP);
    }

    private static OutboxEvent event(ResultSet rs, HeaderColumn column) throws SQLException {
        Map<String, String> headers = new LinkedHashMap<>();
        // A parked row may have been parked for its headers: it is listed without them (its last error says why).
        if (column.problem() == null) {
            for (int i = 0; i < column.names().length; i++) {
                headers.put(column.names()[i], column.values()[i]);
            }
        }
        return new OutboxEvent(rs.getObject("event_id", UUID.class), rs.getString("aggregate_type"),
                rs.getString("aggregate_id"), rs.getString("event_type"), rs.getString("destination"),
                rs.getBytes("payload"), rs.getString("content_type"), headers);
    }

    /**
     * A parked row as an event for listing. A row parked because OutboxEvent refuses it (a blank event type,
     * aggregate, destination or header name) is listed with {@value #BLANK} for a blank text, no destination
     * and without its blank-named headers; its last error says what the row holds.
     */
    private static OutboxEvent listedEvent(ResultSet rs) throws SQLException {
        HeaderColumn column = HeaderColumn.read(rs);
        try {
            return event(rs, column);
        } catch (IllegalArgumentException notAnEvent) {
            OutboxEvent event = new OutboxEvent(rs.getObject("event_id", UUID.class),
                    listable(rs.getString("aggregate_type")), listable(rs.getString("aggregate_id")),
                    listable(rs.getString("event_type")), null, rs.getBytes("payload"), rs.getString("content_type"),
                    Map.of());
            String destination = rs.getString("destination");
            if (destination != null && !destination.isBlank()) {
                event = event.withDestination(destination);
            }
            Map<String, String> headers = new LinkedHashMap<>();
            if (column.problem() == null) {
                for (int i = 0; i < column.names().length; i++) {
                    if (!column.names()[i].isBlank()) {
                        headers.put(column.names()[i], column.values()[i]);
                    }
                }
            }
            return event.withHeaders(headers);
        }
    }

    /** What a parked row's blank text is listed as. */
    static final String BLANK = "(blank)";

    private static String listable(String text) {
        return text == null || text.isBlank() ? BLANK : text;
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        Timestamp timestamp = rs.getTimestamp(column);
        return timestamp == null ? null : timestamp.toInstant();
    }

    // Capped at about 290 years, far beyond any lease, delay or retention, so the SQL interval never overflows.
    private static long micros(Duration duration) {
        long cap = 9_000_000_000_000_000L;
        if (duration.getSeconds() >= cap / 1_000_000) {
            return cap;
        }
        return duration.getSeconds() * 1_000_000 + duration.getNano() / 1000;
    }

    // PostgreSQL text cannot hold U+0000, and a failure reason may carry anything a broker said.
    private static String storable(String reason) {
        return reason.replace('\0', '?');
    }

    @Override
    public String toString() {
        return "PostgresOutboxStore[" + settings.displayName() + "]";
    }
}
