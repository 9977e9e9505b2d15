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
 */
public record ClaimBatch(LeaseToken lease, List<ClaimedDelivery> deliveries, boolean holdsBack) {

    /** A batch whose store does not tell whether it holds rows back. */
    public ClaimBatch(LeaseToken lease, List<ClaimedDelivery> deliveries) {
        this(lease, deliveries, false);
    }

    public ClaimBatch {
        Objects.requireNonNull(lease, "lease");
        deliveries = List.copyOf(deliveries);
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

    public boolean isEmpty() {
        return deliveries.isEmpty();
    }

    public int size() {
        return deliveries.size();
    }
}
