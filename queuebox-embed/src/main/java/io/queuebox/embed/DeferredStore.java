package io.queuebox.embed;

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
import java.util.function.Supplier;

/**
 * The store of a data source whose database could not be asked its URL at start (it was down): the adapter is
 * chosen on the first call that reaches the database, so that {@link QueueBox.Builder#start()} still returns at
 * once and the engine retries the database as it does any outage.
 */
final class DeferredStore implements OutboxStore {

    private final Supplier<OutboxStore> resolve;
    private volatile OutboxStore store;

    DeferredStore(Supplier<OutboxStore> resolve) {
        this.resolve = resolve;
    }

    private OutboxStore store() {
        OutboxStore current = store;
        if (current == null) {
            synchronized (this) {
                if (store == null) {
                    store = resolve.get();
                }
                current = store;
            }
        }
        return current;
    }

    @Override
    public ClaimBatch claim(ClaimRequest request) {
        return store().claim(request);
    }

    @Override
    public int markSent(LeaseToken lease, Collection<UUID> eventIds) {
        return store().markSent(lease, eventIds);
    }

    @Override
    public int reschedule(LeaseToken lease, List<Reschedule> retries) {
        return store().reschedule(lease, retries);
    }

    @Override
    public int park(LeaseToken lease, List<Park> parkings) {
        return store().park(lease, parkings);
    }

    @Override
    public int release(LeaseToken lease, Collection<UUID> eventIds) {
        return store().release(lease, eventIds);
    }

    @Override
    public int renew(LeaseToken lease, Duration leaseLength) {
        return store().renew(lease, leaseLength);
    }

    @Override
    public Optional<Duration> timeUntilNextDue() {
        return store().timeUntilNextDue();
    }

    @Override
    public int purgeSent(Duration retention, int maxRows) {
        return store().purgeSent(retention, maxRows);
    }

    @Override
    public BacklogStats stats() {
        return store().stats();
    }

    @Override
    public List<ParkedEvent> parked(ReplaySelector selector, int limit) {
        return store().parked(selector, limit);
    }

    /** Delegated, so that the real store's capped read is used, not the default's whole read. */
    @Override
    public List<ParkedEvent> parked(ReplaySelector selector, int limit, int maxPayloadBytes) {
        return store().parked(selector, limit, maxPayloadBytes);
    }

    @Override
    public int replay(ReplaySelector selector) {
        return store().replay(selector);
    }
}
