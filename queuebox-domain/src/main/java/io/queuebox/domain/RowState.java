package io.queuebox.domain;

import io.queuebox.ports.AggregateRef;
import java.time.Instant;
import java.util.Objects;

/**
 * What the claim rule needs to know about one outbox row.
 *
 * @param sequence      write order
 * @param aggregate     the aggregate the row belongs to
 * @param status        pending, sent or parked
 * @param nextAttemptAt when the row is due
 * @param leaseUntil    when its lease expires, or {@code null} if it was never leased or was released
 */
public record RowState(long sequence, AggregateRef aggregate, RowStatus status, Instant nextAttemptAt,
                       Instant leaseUntil) {
    public RowState {
        Objects.requireNonNull(aggregate, "aggregate");
        Objects.requireNonNull(status, "status");
        Objects.requireNonNull(nextAttemptAt, "nextAttemptAt");
    }

    /** Pending, due at {@code now}, and not under a live lease. */
    public boolean isClaimableAlone(Instant now) {
        return status == RowStatus.PENDING && !nextAttemptAt.isAfter(now) && !hasLiveLease(now);
    }

    public boolean hasLiveLease(Instant now) {
        return leaseUntil != null && leaseUntil.isAfter(now);
    }
}
