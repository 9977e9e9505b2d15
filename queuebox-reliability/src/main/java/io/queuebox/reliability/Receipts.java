package io.queuebox.reliability;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/** What the consumer received, in the order it received it. */
final class Receipts {

    /**
     * One message as received. {@code redelivered} marks the broker giving the consumer a message again
     * that the consumer had already been given (its own redelivery, not the relay's): such a copy is not a
     * duplicate the relay made.
     */
    record Receipt(UUID eventId, String aggregateId, boolean redelivered, long receivedAt) {
    }

    private final List<Receipt> receipts = new ArrayList<>();
    private final Set<UUID> distinct = new HashSet<>();

    synchronized void add(UUID eventId, String aggregateId, boolean redelivered) {
        receipts.add(new Receipt(eventId, aggregateId, redelivered, System.nanoTime()));
        distinct.add(eventId);
    }

    synchronized List<Receipt> snapshot() {
        return List.copyOf(receipts);
    }

    synchronized boolean containsAll(Set<UUID> ids) {
        return distinct.containsAll(ids);
    }

    synchronized int distinctCount() {
        return distinct.size();
    }

    synchronized long missing(Set<UUID> ids) {
        return ids.stream().filter(id -> !distinct.contains(id)).count();
    }
}
