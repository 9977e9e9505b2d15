package io.queuebox.domain;

import io.queuebox.ports.BacklogStats;
import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.Park;
import io.queuebox.ports.ParkedEvent;
import io.queuebox.ports.ReplaySelector;
import io.queuebox.ports.Reschedule;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

/**
 * A small behaving store for engine tests: the claim is {@link ClaimRule}, every update is fenced by
 * the lease token. Not the testkit's store (the domain's tests must not depend on the testkit).
 */
final class FakeOutboxStore implements OutboxStore {

    static final class Row {
        final long sequence;
        final OutboxEvent event;
        final Instant createdAt;
        RowStatus status = RowStatus.PENDING;
        Instant nextAttemptAt;
        Instant leaseUntil;
        LeaseToken lease;
        int attempts;
        String lastError;

        Row(long sequence, OutboxEvent event, Instant now) {
            this.sequence = sequence;
            this.event = event;
            this.createdAt = now;
            this.nextAttemptAt = now;
        }

        RowState state() {
            return new RowState(sequence, event.aggregate(), status, nextAttemptAt, leaseUntil);
        }
    }

    private final Clock clock;
    private final Map<UUID, Row> rows = new LinkedHashMap<>();
    private long nextSequence = 1;

    final AtomicInteger claimCalls = new AtomicInteger();
    final AtomicInteger renewCalls = new AtomicInteger();
    final AtomicInteger releaseCalls = new AtomicInteger();
    final AtomicInteger timeUntilNextDueCalls = new AtomicInteger();
    final AtomicInteger purgeCalls = new AtomicInteger();
    final AtomicInteger failingClaims = new AtomicInteger();
    final AtomicInteger fullPurges = new AtomicInteger();
    final List<Integer> claimSizes = new java.util.concurrent.CopyOnWriteArrayList<>();
    final List<UUID> sentOrder = new java.util.concurrent.CopyOnWriteArrayList<>();

    FakeOutboxStore(Clock clock) {
        this.clock = clock;
    }

    synchronized List<OutboxEvent> add(OutboxEvent... events) {
        Instant now = clock.instant();
        for (OutboxEvent event : events) {
            rows.put(event.eventId(), new Row(nextSequence++, event, now));
        }
        return List.of(events);
    }

    /** Simulates another relay re-claiming the row after this lease expired. */
    synchronized void stealLease(UUID eventId) {
        rows.get(eventId).lease = LeaseToken.random();
    }

    /** Another claimer takes the row with a lease of its own that runs for {@code leaseLength}. */
    synchronized void stealLease(UUID eventId, Duration leaseLength) {
        Row row = rows.get(eventId);
        row.lease = LeaseToken.random();
        row.leaseUntil = clock.instant().plus(leaseLength);
    }

    synchronized void dueIn(UUID eventId, Duration delay) {
        rows.get(eventId).nextAttemptAt = clock.instant().plus(delay);
    }

    synchronized Row row(UUID eventId) {
        return rows.get(eventId);
    }

    synchronized long count(RowStatus status) {
        return rows.values().stream().filter(r -> r.status == status).count();
    }

    /** The most leases holding rows right after a claim: batches claimed and not yet recorded. */
    final AtomicInteger maxLiveLeases = new AtomicInteger();
    /** When set, every markSent throws it, as a driver missing a class does. */
    volatile Error markSentError;

    /** When set, every claim throws it, as a driver missing a class does. */
    volatile Error claimError;

    /** When set, a claim waits for it to open (or a few seconds) before it looks at the rows. */
    volatile java.util.concurrent.CountDownLatch claimGate;

    /**
     * When set, a claim that has chosen its rows waits for it to open (or a few seconds) before it returns, as
     * a statement whose answer is still on its way does; the store stays usable meanwhile.
     */
    volatile java.util.concurrent.CountDownLatch claimReturnGate;

    /** When set, runs as a claim begins, before it looks at the rows (outside the store's lock). */
    volatile Runnable beforeClaim;

    /** When set, runs after every release, as the statement's answer comes back (outside the store's lock). */
    volatile Runnable afterRelease;

    @Override
    public ClaimBatch claim(ClaimRequest request) {
        Runnable before = beforeClaim;
        if (before != null) {
            before.run();
        }
        ClaimBatch batch = claimNow(request);
        java.util.concurrent.CountDownLatch gate = claimReturnGate;
        if (gate != null) {
            try {
                gate.await(5, java.util.concurrent.TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return batch;
    }

    private synchronized ClaimBatch claimNow(ClaimRequest request) {
        claimCalls.incrementAndGet();
        java.util.concurrent.CountDownLatch gate = claimGate;
        if (gate != null) {
            try {
                gate.await(5, java.util.concurrent.TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        Error error = claimError;
        if (error != null) {
            throw error;
        }
        if (failingClaims.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
            throw new IllegalStateException("database unavailable");
        }
        Instant now = clock.instant();
        List<RowState> states = rows.values().stream().map(Row::state).toList();
        List<Long> sequences = ClaimRule.select(states, now, request);
        LeaseToken lease = LeaseToken.random();
        Map<Long, Row> bySequence = rows.values().stream().collect(Collectors.toMap(r -> r.sequence, r -> r));
        List<ClaimedDelivery> claimed = new ArrayList<>();
        for (long sequence : sequences) {
            Row row = bySequence.get(sequence);
            row.lease = lease;
            row.leaseUntil = now.plus(request.leaseLength());
            claimed.add(new ClaimedDelivery(row.sequence, row.event, row.attempts, lease, row.createdAt));
        }
        claimSizes.add(claimed.size());
        long live = rows.values().stream().filter(r -> r.status == RowStatus.PENDING && r.lease != null
                && r.leaseUntil != null && r.leaseUntil.isAfter(now)).map(r -> r.lease).distinct().count();
        maxLiveLeases.accumulateAndGet((int) live, Math::max);
        if (ClaimRule.heldElsewhere(states, now, sequences, request)) {
            return ClaimBatch.heldElsewhere(lease);
        }
        return new ClaimBatch(lease, claimed, ClaimRule.holdsBack(states, sequences, request));
    }

    private List<Row> owned(LeaseToken lease, Collection<UUID> ids) {
        return ids.stream().map(rows::get)
                .filter(r -> r != null && r.status == RowStatus.PENDING && lease.equals(r.lease)).toList();
    }

    private static void clearLease(Row row) {
        row.lease = null;
        row.leaseUntil = null;
    }

    @Override
    public synchronized int markSent(LeaseToken lease, Collection<UUID> eventIds) {
        Error error = markSentError;
        if (error != null) {
            throw error;
        }
        List<Row> owned = owned(lease, eventIds);
        owned.forEach(r -> {
            sentOrder.add(r.event.eventId());
            r.status = RowStatus.SENT;
            clearLease(r);
        });
        return owned.size();
    }

    @Override
    public synchronized int reschedule(LeaseToken lease, List<Reschedule> retries) {
        Instant now = clock.instant();
        int count = 0;
        for (Reschedule retry : retries) {
            for (Row r : owned(lease, List.of(retry.eventId()))) {
                r.attempts++;
                r.lastError = retry.reason();
                r.nextAttemptAt = now.plus(retry.delay());
                clearLease(r);
                count++;
            }
        }
        return count;
    }

    @Override
    public synchronized int park(LeaseToken lease, List<Park> parkings) {
        int count = 0;
        for (Park park : parkings) {
            for (Row r : owned(lease, List.of(park.eventId()))) {
                r.attempts++;
                r.lastError = park.reason();
                r.status = RowStatus.PARKED;
                clearLease(r);
                count++;
            }
        }
        return count;
    }

    @Override
    public int release(LeaseToken lease, Collection<UUID> eventIds) {
        int released = releaseNow(lease, eventIds);
        Runnable after = afterRelease;
        if (after != null) {
            after.run();
        }
        return released;
    }

    private synchronized int releaseNow(LeaseToken lease, Collection<UUID> eventIds) {
        releaseCalls.incrementAndGet();
        List<Row> owned = owned(lease, eventIds);
        owned.forEach(FakeOutboxStore::clearLease);
        return owned.size();
    }

    @Override
    public synchronized int renew(LeaseToken lease, Duration leaseLength) {
        renewCalls.incrementAndGet();
        Instant until = clock.instant().plus(leaseLength);
        List<Row> owned = rows.values().stream().filter(r -> r.status == RowStatus.PENDING && lease.equals(r.lease))
                .toList();
        owned.forEach(r -> r.leaseUntil = until);
        return owned.size();
    }

    @Override
    public synchronized Optional<Duration> timeUntilNextDue() {
        timeUntilNextDueCalls.incrementAndGet();
        Instant now = clock.instant();
        return rows.values().stream().filter(r -> r.status == RowStatus.PENDING)
                .map(r -> r.leaseUntil != null && r.leaseUntil.isAfter(now) ? r.leaseUntil : r.nextAttemptAt)
                .min(Comparator.naturalOrder())
                .map(at -> at.isAfter(now) ? Duration.between(now, at) : Duration.ZERO);
    }

    @Override
    public synchronized int purgeSent(Duration retention, int maxRows) {
        purgeCalls.incrementAndGet();
        return fullPurges.getAndUpdate(n -> Math.max(0, n - 1)) > 0 ? maxRows : 0;
    }

    @Override
    public synchronized BacklogStats stats() {
        return new BacklogStats(count(RowStatus.PENDING), 0, count(RowStatus.PARKED), Optional.empty());
    }

    @Override
    public List<ParkedEvent> parked(ReplaySelector selector, int limit) {
        throw new UnsupportedOperationException("not needed by the engine");
    }

    @Override
    public int replay(ReplaySelector selector) {
        throw new UnsupportedOperationException("not needed by the engine");
    }
}
