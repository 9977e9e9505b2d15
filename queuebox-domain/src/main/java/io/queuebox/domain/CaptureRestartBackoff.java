package io.queuebox.domain;

import java.time.Duration;

/**
 * How long to wait before restarting a failed capture connector: 1 s after the first failure, doubling
 * up to 30 s, and back to 1 s after a healthy run (one that lasted at least
 * {@link #HEALTHY_RUN}, 60 s). Immutable: each step returns the next state.
 */
public final class CaptureRestartBackoff {

    /** The first delay: 1 s. */
    public static final Duration INITIAL_DELAY = Duration.ofSeconds(1);
    /** The longest delay: 30 s. */
    public static final Duration MAX_DELAY = Duration.ofSeconds(30);
    /** A run at least this long counts as healthy and resets the backoff: 60 s. */
    public static final Duration HEALTHY_RUN = Duration.ofSeconds(60);

    private static final CaptureRestartBackoff INITIAL = new CaptureRestartBackoff(0);

    private final int consecutiveFailures;

    private CaptureRestartBackoff(int consecutiveFailures) {
        this.consecutiveFailures = consecutiveFailures;
    }

    /** No failure yet. */
    public static CaptureRestartBackoff initial() {
        return INITIAL;
    }

    /**
     * The state after the connector failed having run for {@code ranFor}: a healthy run (at least
     * {@link #HEALTHY_RUN}) counts as a first failure again.
     */
    public CaptureRestartBackoff failedAfter(Duration ranFor) {
        if (ranFor.compareTo(HEALTHY_RUN) >= 0) {
            return new CaptureRestartBackoff(1);
        }
        return new CaptureRestartBackoff(consecutiveFailures == Integer.MAX_VALUE ? consecutiveFailures
                : consecutiveFailures + 1);
    }

    /** The state after a healthy run: the next failure waits {@link #INITIAL_DELAY} again. */
    public CaptureRestartBackoff healthy() {
        return INITIAL;
    }

    /** How many failures in a row this state counts. */
    public int consecutiveFailures() {
        return consecutiveFailures;
    }

    /** How long to wait before the next restart: zero before any failure, then 1, 2, 4, 8, 16, 30, 30 ... s. */
    public Duration delay() {
        if (consecutiveFailures == 0) {
            return Duration.ZERO;
        }
        int doublings = Math.min(consecutiveFailures - 1, 10);
        Duration delay = INITIAL_DELAY.multipliedBy(1L << doublings);
        return delay.compareTo(MAX_DELAY) > 0 ? MAX_DELAY : delay;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof CaptureRestartBackoff that && consecutiveFailures == that.consecutiveFailures;
    }

    @Override
    public int hashCode() {
        return Integer.hashCode(consecutiveFailures);
    }

    @Override
    public String toString() {
        return "CaptureRestartBackoff[failures=" + consecutiveFailures + ", delay=" + delay() + "]";
    }
}
