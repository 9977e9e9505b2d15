package io.queuebox.domain;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.LeaseToken;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;

/** A claimed batch whose publish is running: what the lease renewer needs to keep its lease alive. */
final class InFlightBatch {

    private final ClaimBatch batch;
    private final List<UUID> eventIds;
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
