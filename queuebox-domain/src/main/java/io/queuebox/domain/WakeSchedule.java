package io.queuebox.domain;

import io.queuebox.ports.WakeReason;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * When an idle worker wakes next: the earliest of the wake interval (the poll interval in polling mode,
 * the reconciliation interval in capture mode), the next retry that falls due, the next lease that
 * expires, a pending wake-up (capture, external hint) and shutdown.
 *
 * <p>A pure function of durations measured from now; negative durations count as "now".
 * Shutdown wins over everything; a pending wake-up wins over timers; on a tie between the interval and a
 * deadline the interval is reported.
 */
public final class WakeSchedule {

    private WakeSchedule() {
    }

    /**
     * The next wake.
     *
     * @param wakeInterval     the longest an idle worker waits
     * @param nextRetryDue     until the earliest retry known to fall due, if any
     * @param nextLeaseExpiry  until the earliest lease known to expire, if any
     * @param pendingWake      a wake-up that arrived and was not yet acted on, if any
     * @param shuttingDown     whether the engine is stopping
     */
    public static Wake next(Duration wakeInterval, Optional<Duration> nextRetryDue, Optional<Duration> nextLeaseExpiry,
                            Optional<WakeReason> pendingWake, boolean shuttingDown) {
        Objects.requireNonNull(wakeInterval, "wakeInterval");
        Objects.requireNonNull(nextRetryDue, "nextRetryDue");
        Objects.requireNonNull(nextLeaseExpiry, "nextLeaseExpiry");
        Objects.requireNonNull(pendingWake, "pendingWake");
        if (shuttingDown) {
            return new Wake(Duration.ZERO, WakeReason.SHUTDOWN);
        }
        if (pendingWake.isPresent()) {
            return new Wake(Duration.ZERO, pendingWake.get());
        }
        Wake next = new Wake(atLeastZero(wakeInterval), WakeReason.INTERVAL);
        for (Optional<Duration> deadline : List.of(nextRetryDue, nextLeaseExpiry)) {
            if (deadline.isPresent() && atLeastZero(deadline.get()).compareTo(next.delay()) < 0) {
                next = new Wake(atLeastZero(deadline.get()), WakeReason.DEADLINE);
            }
        }
        return next;
    }

    private static Duration atLeastZero(Duration duration) {
        return duration.isNegative() ? Duration.ZERO : duration;
    }

    /** Wake after {@code delay} for {@code reason}. */
    public record Wake(Duration delay, WakeReason reason) {
        public Wake {
            Objects.requireNonNull(delay, "delay");
            Objects.requireNonNull(reason, "reason");
        }
    }
}
