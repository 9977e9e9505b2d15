package io.queuebox.jdbc;

import java.time.Duration;
import java.util.Objects;

/** The argument checks of OutboxStore's contract, worded the same in every SQL adapter. */
public final class StoreArguments {

    private StoreArguments() {
    }

    /** For {@code renew}: a lease length above zero. */
    public static void leaseLength(Duration leaseLength) {
        if (leaseLength.isNegative() || leaseLength.isZero()) {
            throw new IllegalArgumentException("leaseLength must be positive, got: " + leaseLength);
        }
    }

    /** For {@code purgeSent}: a retention of zero or more and at least one row. */
    public static void purge(Duration retention, int maxRows) {
        Objects.requireNonNull(retention, "retention");
        if (retention.isNegative()) {
            throw new IllegalArgumentException("retention must not be negative, got: " + retention);
        }
        atLeastOne("maxRows", maxRows);
    }

    public static void atLeastOne(String name, int value) {
        if (value < 1) {
            throw new IllegalArgumentException(name + " must be >= 1, got: " + value);
        }
    }
}
