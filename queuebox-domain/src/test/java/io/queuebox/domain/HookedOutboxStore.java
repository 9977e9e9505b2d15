package io.queuebox.domain;

import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.Reschedule;
import java.time.Duration;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * Delegates to a {@link FakeOutboxStore}; hooks run outside the fake's monitor, so a hook that holds a call leaves the
 * store usable for the engine's other threads.
 */
final class HookedOutboxStore extends ForwardingOutboxStore {
    volatile BiConsumer<LeaseToken, Collection<UUID>> beforeMarkSent;
    volatile Consumer<Set<UUID>> afterReschedule;
    volatile Consumer<LeaseToken> beforeRenew;
    volatile Consumer<LeaseToken> afterRenew;
    /** Runs after a release that handed back at least one row, with the rows asked for. */
    volatile Consumer<Collection<UUID>> onRelease;

    HookedOutboxStore(FakeOutboxStore delegate) {
        super(delegate);
    }

    @Override
    public int markSent(LeaseToken lease, Collection<UUID> eventIds) {
        BiConsumer<LeaseToken, Collection<UUID>> hook = beforeMarkSent;
        if (hook != null) {
            hook.accept(lease, eventIds);
        }
        return super.markSent(lease, eventIds);
    }

    @Override
    public int reschedule(LeaseToken lease, List<Reschedule> retries) {
        int updated = super.reschedule(lease, retries);
        Consumer<Set<UUID>> hook = afterReschedule;
        if (hook != null) {
            Set<UUID> ids = new HashSet<>();
            retries.forEach(r -> ids.add(r.eventId()));
            hook.accept(ids);
        }
        return updated;
    }

    @Override
    public int renew(LeaseToken lease, Duration leaseLength) {
        Consumer<LeaseToken> before = beforeRenew;
        if (before != null) {
            before.accept(lease);
        }
        int owned = super.renew(lease, leaseLength);
        Consumer<LeaseToken> after = afterRenew;
        if (after != null) {
            after.accept(lease);
        }
        return owned;
    }

    @Override
    public int release(LeaseToken lease, Collection<UUID> eventIds) {
        int released = super.release(lease, eventIds);
        Consumer<Collection<UUID>> hook = onRelease;
        if (hook != null && released > 0) {
            hook.accept(eventIds);
        }
        return released;
    }
}
