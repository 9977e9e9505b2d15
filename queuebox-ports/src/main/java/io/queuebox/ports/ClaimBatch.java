package io.queuebox.ports;

import java.util.List;
import java.util.Objects;

/**
 * The rows one claim returned, all under the same lease.
 *
 * @param lease      the fencing token shared by every delivery of the batch
 * @param deliveries the claimed rows in ascending sequence order; may be empty
 * @param holdsBack  the store saw, behind the batch's last row of one of its aggregates, an unsent row the batch
 *                   holds back: the engine claims again once the batch's outcome is written, since that row may
 *                   be claimable then and no wake-up may come for it (two claims at once can each leave such a row
 *                   out). False when there is none, or when the store does not tell (always safe: the row then
 *                   waits for the next wake-up or poll)
 * @param heldElsewhere an empty batch only: the store saw due rows and could take none of them, each one held back
 *                   by an earlier row of its aggregate that another claim holds (or that is in backoff or parked), or
 *                   held by another claim itself. Claiming again finds nothing until one of those claims ends, and
 *                   that claimer looks again itself, so the engine polls less often for a while
 *                   ({@code HeldElsewhereBackoff}). False for a batch with rows, when nothing is due, or when the
 *                   store does not tell (always safe: the engine then polls at its interval)
 */
public record ClaimBatch(LeaseToken lease, List<ClaimedDelivery> deliveries, boolean holdsBack, boolean heldElsewhere) {

    /** A batch whose store does not tell whether it holds rows back. */
    public ClaimBatch(LeaseToken lease, List<ClaimedDelivery> deliveries) {
        this(lease, deliveries, false);
    }

    /** A batch whose store does not tell whether due rows are held elsewhere. */
    public ClaimBatch(LeaseToken lease, List<ClaimedDelivery> deliveries, boolean holdsBack) {
        this(lease, deliveries, holdsBack, false);
    }

    public ClaimBatch {
        Objects.requireNonNull(lease, "lease");
        deliveries = List.copyOf(deliveries);
        if (heldElsewhere && !deliveries.isEmpty()) {
            throw new IllegalArgumentException("heldElsewhere is for an empty batch; this one has " + deliveries.size()
                    + " deliveries");
        }
        for (ClaimedDelivery delivery : deliveries) {
            if (!delivery.lease().equals(lease)) {
                throw new IllegalArgumentException("delivery " + delivery.eventId() + " carries lease "
                        + delivery.lease() + ", not the batch's lease " + lease);
            }
        }
    }

    public static ClaimBatch empty(LeaseToken lease) {
        return new ClaimBatch(lease, List.of());
    }

    /** An empty batch whose store saw due rows, every one held back or held by another claim. */
    public static ClaimBatch heldElsewhere(LeaseToken lease) {
        return new ClaimBatch(lease, List.of(), false, true);
    }

    public boolean isEmpty() {
        return deliveries.isEmpty();
    }

    public int size() {
        return deliveries.size();
    }
}
