package io.queuebox.domain;

import io.queuebox.ports.BacklogStats;
import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.Park;
import io.queuebox.ports.ParkedEvent;
import io.queuebox.ports.ReplaySelector;
import io.queuebox.ports.Reschedule;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/** A store that hands every call to another: tests override the calls they hook (a gate, a hang, an error). */
abstract class ForwardingOutboxStore implements OutboxStore {

    private final OutboxStore delegate;

    ForwardingOutboxStore(OutboxStore delegate) {
        this.delegate = delegate;
    }

    @Override
    public ClaimBatch claim(ClaimRequest request) {
        return delegate.claim(request);
    }

    @Override
    public int markSent(LeaseToken lease, Collection<UUID> eventIds) {
        return delegate.markSent(lease, eventIds);
    }

    @Override
    public int reschedule(LeaseToken lease, List<Reschedule> retries) {
        return delegate.reschedule(lease, retries);
    }

    @Override
    public int park(LeaseToken lease, List<Park> parkings) {
        return delegate.park(lease, parkings);
    }

    @Override
    public int release(LeaseToken lease, Collection<UUID> eventIds) {
        return delegate.release(lease, eventIds);
    }

    @Override
    public int renew(LeaseToken lease, Duration leaseLength) {
        return delegate.renew(lease, leaseLength);
    }

    @Override
    public Optional<Duration> timeUntilNextDue() {
        return delegate.timeUntilNextDue();
    }

    @Override
    public int purgeSent(Duration retention, int maxRows) {
        return delegate.purgeSent(retention, maxRows);
    }

    @Override
    public BacklogStats stats() {
        return delegate.stats();
    }

    @Override
    public List<ParkedEvent> parked(ReplaySelector selector, int limit) {
        return delegate.parked(selector, limit);
    }

    @Override
    public int replay(ReplaySelector selector) {
        return delegate.replay(selector);
    }
}
