package io.queuebox.domain;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.LeaseToken;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A claimed batch whose publish is running. Either its worker records the outcomes or, after the
 * shutdown deadline, the engine releases it: {@link #settle()} lets exactly one of them write.
 */
final class InFlightBatch {

    private final ClaimBatch batch;
    private final List<UUID> eventIds;
    private final AtomicBoolean settled = new AtomicBoolean();
    private volatile Instant nextRenewal;
    private volatile Instant leaseExpiry;
    private volatile int owned;

    InFlightBatch(ClaimBatch batch, Instant claimedAt, Duration leaseLength,
                  Duration renewalInterval) {
        this.batch = batch;
        this.eventIds = batch.deliveries().stream().map(ClaimedDelivery::eventId).toList();
        this.nextRenewal = claimedAt.plus(renewalInterval);
        this.leaseExpiry = claimedAt.plus(leaseLength);
        this.owned = eventIds.size();
    }

    LeaseToken lease() {
        return batch.lease();
    }

    List<UUID> eventIds() {
        return eventIds;
    }

    /** True for the first caller only: that caller writes the batch's outcome. */
    boolean settle() {
        return settled.compareAndSet(false, true);
    }

    boolean isSettled() {
        return settled.get();
    }

    Instant nextRenewal() {
        return nextRenewal;
    }

    Instant leaseExpiry() {
        return leaseExpiry;
    }

    int owned() {
        return owned;
    }

    void renewed(Instant at, Duration leaseLength, Duration renewalInterval, int stillOwned) {
        nextRenewal = at.plus(renewalInterval);
        leaseExpiry = at.plus(leaseLength);
        owned = stillOwned;
    }
}
