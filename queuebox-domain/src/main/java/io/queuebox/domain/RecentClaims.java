package io.queuebox.domain;

import java.util.ArrayDeque;
import java.util.Collection;
import java.util.HashSet;
import java.util.Set;
import java.util.UUID;

/**
 * The event ids this engine claimed most recently, up to a bound. A wake-up about a row found here came after
 * a claim already took the row (the database log runs some milliseconds behind the table), so the claim it
 * would start can only come back empty. Released rows are forgotten: they are due again.
 */
final class RecentClaims {

    private final int capacity;
    private final ArrayDeque<UUID> order;
    private final Set<UUID> ids;

    RecentClaims(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be at least 1, got " + capacity);
        }
        this.capacity = capacity;
        // Sized for the bound up front: growing the table while claims run cost as much as filling it.
        this.order = new ArrayDeque<>(capacity + 1);
        this.ids = new HashSet<>((int) (capacity / 0.75f) + 2);
    }

    synchronized void claimed(Collection<UUID> eventIds) {
        for (UUID id : eventIds) {
            if (ids.add(id)) {
                order.addLast(id);
            }
        }
        while (order.size() > capacity) {
            ids.remove(order.removeFirst());
        }
    }

    synchronized void released(Collection<UUID> eventIds) {
        // The queue keeps the id until it ages out; contains() answers from the set alone.
        ids.removeAll(eventIds);
    }

    synchronized boolean contains(UUID eventId) {
        return ids.contains(eventId);
    }
}
