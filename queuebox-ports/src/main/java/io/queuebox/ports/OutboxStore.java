package io.queuebox.ports;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * The outbox table as the delivery engine sees it: claim due rows under a lease, record what became of
 * them, and keep the table small. SQL is the only source of truth; nothing here is cached by the caller.
 *
 * <h2>The claim rule</h2>
 * A row is claimable when all of these hold, evaluated on the <em>store's</em> clock (the database clock
 * for SQL stores):
 * <ol>
 *   <li>it is pending (not sent, not parked);</li>
 *   <li>it is due: its next attempt time is not in the future;</li>
 *   <li>it has no live lease: it was never leased, or its lease expired;</li>
 *   <li>with {@link Ordering#PER_AGGREGATE}: every row of the same aggregate with a smaller sequence is
 *       sent, or is claimed in the same batch, or (only under {@link ParkingPolicy#CONTINUE_AGGREGATE})
 *       is parked. A row whose earlier sibling is pending but not yet due, or leased by another claimer,
 *       is therefore not claimable.</li>
 * </ol>
 * Claimable rows are taken in ascending sequence order. Two claimers running at the same time never
 * receive the same row while its lease is live.
 *
 * <h2>Fencing</h2>
 * {@link #markSent}, {@link #reschedule}, {@link #park}, {@link #release} and {@link #renew} name the
 * claim's {@link LeaseToken} and touch only rows that still carry that token. A row whose lease expired
 * and that another claimer re-claimed carries a new token, so the stale claimer's update changes nothing;
 * the returned count tells the caller how many rows it still owned. A row whose lease expired but that
 * nobody re-claimed still carries the token, and the update applies.
 *
 * <h2>Thread safety</h2>
 * Implementations are safe for concurrent use by several engine workers and by several processes.
 */
public interface OutboxStore {

    /**
     * Claims up to {@link ClaimRequest#maxRows()} claimable rows under one new lease that expires after
     * {@link ClaimRequest#leaseLength()} on the store's clock. Each claimed row keeps its attempt count;
     * the claim does not count as an attempt.
     *
     * @return the claimed rows in ascending sequence order under a fresh token; an empty batch when nothing
     *         is claimable
     */
    ClaimBatch claim(ClaimRequest request);

    /**
     * Marks rows sent (or deletes them, for a store configured to delete on send) and clears their lease.
     *
     * @return how many of the rows still carried {@code lease} and were marked
     */
    int markSent(LeaseToken lease, Collection<UUID> eventIds);

    /**
     * Returns rows to pending, each due after its own delay, with attempts increased by one, the reason
     * kept as last error, and the lease cleared.
     *
     * @return how many of the rows still carried {@code lease} and were rescheduled
     */
    int reschedule(LeaseToken lease, List<Reschedule> retries);

    /**
     * Parks rows: they are no longer claimable until {@link #replay} makes them pending again. Attempts
     * increase by one, the reason is kept as last error, and the lease is cleared.
     *
     * @return how many of the rows still carried {@code lease} and were parked
     */
    int park(LeaseToken lease, List<Park> parkings);

    /**
     * Gives rows back unchanged: pending, same due time, same attempt count, lease cleared. Used for rows
     * the engine did not attempt (shutdown, or a later row of an aggregate whose earlier row failed).
     *
     * @return how many of the rows still carried {@code lease} and were released
     */
    int release(LeaseToken lease, Collection<UUID> eventIds);

    /**
     * Extends the lease of every row still carrying {@code lease} to {@code leaseLength} from now on the
     * store's clock, for a batch whose publishing takes longer than expected.
     *
     * @return how many rows still carried the token; 0 means the claim was lost entirely
     */
    int renew(LeaseToken lease, Duration leaseLength);

    /**
     * How long until something may become claimable without a new row being written: the earliest due
     * time of a pending row that is not due yet, or the earliest expiry of a live lease, measured from now
     * on the store's clock. {@link Duration#ZERO} when something is claimable now.
     *
     * @return empty when no pending row exists at all
     */
    Optional<Duration> timeUntilNextDue();

    /**
     * Deletes at most {@code maxRows} sent rows whose send time is older than {@code retention}. Each call
     * is one short transaction, so a caller purges a large table by calling again while the result equals
     * {@code maxRows}. Pending and parked rows are never deleted.
     *
     * @return how many rows were deleted
     */
    int purgeSent(Duration retention, int maxRows);

    /** Counts for operators and metrics. */
    BacklogStats stats();

    /**
     * Parked rows matching the selector, in ascending sequence order, at most {@code limit} of them.
     * Used to list them and as the dry run of {@link #replay}.
     */
    List<ParkedEvent> parked(ReplaySelector selector, int limit);

    /**
     * As {@link #parked(ReplaySelector, int)}, reading at most {@code maxPayloadBytes} of each payload: a view of
     * the parked rows (the operator console's list) need not hold whole payloads, which are the large ones when
     * a row was parked for its size. Each event is otherwise unchanged; {@link ParkedEvent#payloadBytes()} is the
     * whole payload's length. The default reads whole payloads and truncates them, which is correct but bounds
     * nothing: a store that can cap the read in its query should override it.
     *
     * @param maxPayloadBytes at least 0
     */
    default List<ParkedEvent> parked(ReplaySelector selector, int limit, int maxPayloadBytes) {
        ParkedEvent.requirePayloadCap(maxPayloadBytes);
        return parked(selector, limit).stream().map(row -> row.withPayloadCappedAt(maxPayloadBytes)).toList();
    }

    /**
     * Makes parked rows matching the selector pending again, due now, with their attempt count reset to 0
     * and their last error kept.
     *
     * @return how many rows were replayed
     */
    int replay(ReplaySelector selector);
}
