package io.queuebox.ports;

import java.util.List;
import java.util.Objects;

/**
 * The rows one claim returned, all under the same lease.
 *
 * @param lease      the fencing token shared by every delivery of the batch
 * @param deliveries the claimed rows in ascending sequence order; may be empty
 */
public record ClaimBatch(LeaseToken lease, List<ClaimedDelivery> deliveries) {
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
