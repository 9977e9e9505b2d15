package io.queuebox.domain;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

/**
 * The event ids this engine claimed most recently, up to a bound. A wake-up about a row found here came after
 * a claim already took the row (the database log runs some milliseconds behind the table), so the claim it
 * would start can only come back empty. Released rows are forgotten: they are due again. A row whose wake-up
 * was skipped is marked, so that its release can wake the engine in that wake-up's place.
 */
final class RecentClaims {

    private static final byte SKIPPED = 1;
    private static final byte NAMED = 2;
    private static final Byte NONE = 0;

    // id -> SKIPPED: a wake-up naming it was skipped while it was claimed; NAMED: a wake-up named it before this claim
    private final Map<UUID, Byte> ids;

    RecentClaims(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be at least 1, got " + capacity);
        }
        // Insertion order is claim order: a row released and claimed again counts from its new claim. Sized for
        // the bound up front: growing the table while claims run cost as much as filling it.
        this.ids = new LinkedHashMap<>((int) (capacity / 0.75f) + 2) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<UUID, Byte> eldest) {
                return size() > capacity;
            }
        };
    }

    void claimed(UUID eventId) {
        ids.putIfAbsent(eventId, NONE);
    }

    /** Marks a claimed row as one a wake-up named before its claim took it: its release makes it awaited again. */
    void namedBeforeItsClaim(UUID eventId) {
        ids.computeIfPresent(eventId, (id, flags) -> (byte) (flags | NAMED));
    }

    void claimed(Collection<UUID> eventIds) {
        eventIds.forEach(this::claimed);
    }

    /**
     * Forgets released rows, adding to {@code named} those a wake-up named before their claim; answers whether a
     * wake-up about one of them was skipped.
     */
    boolean released(Collection<UUID> eventIds, Collection<UUID> named) {
        boolean skipped = false;
        for (UUID id : eventIds) {
            Byte flags = ids.remove(id);
            if (flags != null) {
                skipped |= (flags & SKIPPED) != 0;
                if ((flags & NAMED) != 0) {
                    named.add(id);
                }
            }
        }
        return skipped;
    }

    boolean contains(UUID eventId) {
        return ids.containsKey(eventId);
    }

    /** Answers whether the row is here, and marks it as one whose wake-up was skipped. */
    boolean skipWakeFor(UUID eventId) {
        return ids.computeIfPresent(eventId, (id, flags) -> (byte) (flags | SKIPPED)) != null;
    }
}
