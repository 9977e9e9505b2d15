package io.queuebox.ports;

import java.util.Objects;
import java.util.UUID;

/**
 * The fencing token of one claim. Every update a claimer makes after its claim (mark sent, reschedule,
 * park, release, renew) names this token, and the store applies it only to rows that still carry it.
 * A relay whose lease expired and whose rows were re-claimed by another relay therefore changes nothing.
 */
public record LeaseToken(UUID value) {
    public LeaseToken {
        Objects.requireNonNull(value, "value");
    }

    /** A fresh random token. */
    public static LeaseToken random() {
        return new LeaseToken(UUID.randomUUID());
    }

    @Override
    public String toString() {
        return value.toString();
    }
}
