package io.queuebox.ports;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * @param pending          rows not yet sent and not parked (leased ones included)
 * @param leased           pending rows under a live lease
 * @param parked           rows waiting for an operator
 * @param oldestPendingAge age of the oldest pending row on the store's clock; empty when none is pending
 */
public record BacklogStats(long pending, long leased, long parked, Optional<Duration> oldestPendingAge) {
    public BacklogStats {
        Objects.requireNonNull(oldestPendingAge, "oldestPendingAge");
    }
}
