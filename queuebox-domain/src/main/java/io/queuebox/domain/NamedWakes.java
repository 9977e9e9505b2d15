package io.queuebox.domain;

import io.queuebox.ports.WakeReason;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * Wake-ups that name their row, checked against the engine's own claims. A row this engine claimed recently
 * needs no claim. A row named while a claim is under way is held until no claim is: the claim under way may
 * be taking it (the log reports a row a few milliseconds after it committed, when a claim often started
 * already), and a second claimer would find it locked. Rows still unclaimed then wake the engine.
 */
final class NamedWakes {

    private final int capacity;
    // Made at the first wake-up that names a row: an engine no source names rows to (polling, notify, a drain)
    // pays nothing per claimed row.
    private RecentClaims recent;
    private final Set<UUID> held = new HashSet<>();
    private WakeReason heldReason;
    private int claimsUnderWay;

    /** Remembers up to {@code capacity} claimed rows. */
    NamedWakes(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be at least 1, got " + capacity);
        }
        this.capacity = capacity;
    }

    /** A wake-up names {@code eventId}: answers whether to wake the engine now. */
    synchronized boolean arrived(UUID eventId, WakeReason reason) {
        if (recent == null) {
            recent = new RecentClaims(capacity);
        }
        if (recent.contains(eventId)) {
            return false;
        }
        if (claimsUnderWay > 0) {
            held.add(eventId);
            heldReason = reason;
            return false;
        }
        return true;
    }

    synchronized void claimStarted() {
        claimsUnderWay++;
    }

    /**
     * A claim returned {@code claimed} (empty when it failed): answers the reason to wake the engine with when
     * rows named meanwhile are still unclaimed and no claim is under way any more, else null.
     */
    synchronized WakeReason claimEnded(List<UUID> claimed) {
        if (recent != null) {
            recent.claimed(claimed);
        }
        claimsUnderWay--;
        if (claimsUnderWay > 0 || held.isEmpty()) {
            return null;
        }
        held.removeIf(recent::contains); // held is not empty, so a row was named and recent exists
        WakeReason reason = held.isEmpty() ? null : heldReason;
        held.clear();
        return reason;
    }

    /** Released rows are due again: a wake-up naming one wakes the engine. */
    synchronized void released(Collection<UUID> eventIds) {
        if (recent != null) {
            recent.released(eventIds);
        }
    }
}
