package io.queuebox.domain;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.PriorityQueue;

/**
 * The times this engine knows something becomes claimable without a new row: retries it scheduled,
 * leases that expire (its own after a failed write, or whatever the store reported at start). A deadline
 * that has passed is reported once as "now" and then forgotten.
 */
final class Deadlines {

    // Bounded so a long outage with many reschedules cannot grow memory; the wake interval covers the rest.
    private static final int MAX_ENTRIES = 10_000;

    private final Clock clock;
    private final PriorityQueue<Instant> retries = new PriorityQueue<>();
    private final PriorityQueue<Instant> leaseExpiries = new PriorityQueue<>();

    Deadlines(Clock clock) {
        this.clock = clock;
    }

    synchronized void retryDueAt(Instant at) {
        add(retries, at);
    }

    synchronized void leaseExpiresAt(Instant at) {
        add(leaseExpiries, at);
    }

    synchronized Optional<Duration> untilNextRetry() {
        return untilNext(retries);
    }

    synchronized Optional<Duration> untilNextLeaseExpiry() {
        return untilNext(leaseExpiries);
    }

    /** The earliest deadline known, passed or not. */
    synchronized Optional<Instant> earliest() {
        Instant retry = retries.peek();
        Instant lease = leaseExpiries.peek();
        if (retry == null || lease == null) {
            return Optional.ofNullable(retry == null ? lease : retry);
        }
        return Optional.of(retry.isBefore(lease) ? retry : lease);
    }

    private static void add(PriorityQueue<Instant> queue, Instant at) {
        if (queue.size() < MAX_ENTRIES) {
            queue.add(at);
        }
    }

    /** Forgets every deadline up to {@code at}: a claim that started then covers them. */
    synchronized void reachedAt(Instant at) {
        while (!retries.isEmpty() && !retries.peek().isAfter(at)) {
            retries.poll();
        }
        while (!leaseExpiries.isEmpty() && !leaseExpiries.peek().isAfter(at)) {
            leaseExpiries.poll();
        }
    }

    private Optional<Duration> untilNext(PriorityQueue<Instant> queue) {
        Instant head = queue.peek();
        if (head == null) {
            return Optional.empty();
        }
        Duration until = Duration.between(clock.instant(), head);
        return Optional.of(until.isNegative() ? Duration.ZERO : until);
    }
}
