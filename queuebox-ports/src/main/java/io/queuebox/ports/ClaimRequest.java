package io.queuebox.ports;

import java.time.Duration;
import java.util.Objects;

/**
 * What one claim asks of the store.
 *
 * @param owner         a name for the claiming relay (host and process), recorded on the rows for operators
 * @param maxRows       the most rows to claim, at least 1
 * @param leaseLength   how long the claim holds the rows, measured on the database clock
 * @param ordering      whether per-aggregate order restricts what is claimable
 * @param parkingPolicy whether a parked row holds back later rows of its aggregate
 */
public record ClaimRequest(String owner, int maxRows, Duration leaseLength, Ordering ordering,
                           ParkingPolicy parkingPolicy) {
    public ClaimRequest {
        if (owner == null || owner.isBlank()) {
            throw new IllegalArgumentException("owner must be non-blank");
        }
        if (maxRows < 1) {
            throw new IllegalArgumentException("maxRows must be >= 1, got: " + maxRows);
        }
        Objects.requireNonNull(leaseLength, "leaseLength");
        if (leaseLength.isNegative() || leaseLength.isZero()) {
            throw new IllegalArgumentException("leaseLength must be positive, got: " + leaseLength);
        }
        Objects.requireNonNull(ordering, "ordering");
        Objects.requireNonNull(parkingPolicy, "parkingPolicy");
    }
}
