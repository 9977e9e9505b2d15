package io.queuebox.domain;

import java.time.Duration;

/**
 * How the engine claims while its claims come back empty with every due row held elsewhere (ClaimBatch
 * heldElsewhere): under per-aggregate ordering, a few batches in flight can hold the head of every aggregate, and
 * a claim that finds that out walks them all for nothing. The claimer holding them looks again itself once its
 * outcome is written, so the others gain nothing by looking often: the poll interval doubles with each such claim
 * in a row, up to {@link #MAX_FACTOR} times the interval and at most {@link #CAP} (never below the interval), and for
 * that long a full batch does not wake an idle worker to join in. A claim that takes rows after a wait, or finds
 * nothing due, ends it. Claims for wake-ups, deadlines and the engine's own full batches are not delayed.
 */
final class HeldElsewhereBackoff {

    static final int MAX_FACTOR = 16;

    /** Bounds the wait for rows whose claimer died: the database frees them at once, and a poll takes them this late. */
    static final Duration CAP = Duration.ofSeconds(2);

    /** What the interval is multiplied by: 1 until a claim finds every due row held elsewhere, then doubled per claim. */
    private long factor = 1;
    private long lastNanos;

    /** A claim came back empty with every due row held elsewhere, at {@code nanos} (System.nanoTime). */
    synchronized void heldElsewhere(long nanos) {
        factor = Math.min(factor * 2, MAX_FACTOR);
        lastNanos = nanos;
    }

    /** A claim took rows after a wait, or found nothing due. */
    synchronized void reset() {
        factor = 1;
    }

    /** The poll interval: {@code interval}, stretched while claims find every due row held elsewhere. */
    synchronized Duration pollInterval(Duration interval) {
        if (factor == 1) {
            return interval;
        }
        Duration stretched = interval.multipliedBy(factor);
        Duration cap = interval.compareTo(CAP) > 0 ? interval : CAP;
        return stretched.compareTo(cap) > 0 ? cap : stretched;
    }

    /** Whether a full batch should leave idle workers be: a claim found every due row held elsewhere lately. */
    synchronized boolean holdsOffPeers(long nanos, Duration interval) {
        return factor > 1 && nanos - lastNanos < pollInterval(interval).toNanos();
    }
}
