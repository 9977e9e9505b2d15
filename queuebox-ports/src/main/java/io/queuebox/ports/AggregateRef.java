package io.queuebox.ports;

import java.util.Objects;

/**
 * One aggregate instance: the unit of ordering. Events of one aggregate are delivered in the order
 * they were written; events of different aggregates are not ordered relative to each other.
 */
public record AggregateRef(String type, String id) {
    public AggregateRef {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(id, "id");
    }

    @Override
    public String toString() {
        return type + "/" + id;
    }
}
