package io.queuebox.domain;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.LeaseToken;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;

/**
 * A claimed batch not yet published: waiting for its worker's publish stage or publishing. What the lease renewer
 * needs to keep its lease alive.
 */
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

    // Rows found taken by another claimer and already reported, so that the renewer and the outcome write,
    // which both run into the same lost rows, report each row once.
    private int lostReported;
    private int lostCredited;

    /** The renewer found {@code nowOwned} of the batch's rows still leased: answers how many are newly lost. */
    synchronized int lostOnRenewal(int nowOwned) {
        int lost = eventIds.size() - nowOwned;
        int newly = Math.max(0, lost - lostReported);
        lostReported = Math.max(lostReported, lost);
        return newly;
    }

    /** An outcome write missed {@code lostInWrite} rows: answers how many the renewer had not reported. */
    synchronized int lostOnOutcome(int lostInWrite) {
        int credit = Math.min(lostInWrite, lostReported - lostCredited);
        lostCredited += credit;
        return lostInWrite - credit;
    }

    void renewed(Instant at, Duration leaseLength, Duration renewalInterval, int stillOwned) {
        nextRenewal = at.plus(renewalInterval);
        leaseExpiry = at.plus(leaseLength);
        owned = stillOwned;
    }
}
