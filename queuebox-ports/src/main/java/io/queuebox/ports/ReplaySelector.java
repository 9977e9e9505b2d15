package io.queuebox.ports;

import java.util.Objects;
import java.util.Set;
import java.util.UUID;

/** Which parked rows an operator means. */
public sealed interface ReplaySelector {

    static ReplaySelector events(Set<UUID> eventIds) {
        return new ByEventIds(eventIds);
    }

    static ReplaySelector aggregate(String aggregateType, String aggregateId) {
        return new ByAggregate(new AggregateRef(aggregateType, aggregateId));
    }

    static ReplaySelector allParked() {
        return AllParked.INSTANCE;
    }

    /** Whether a parked row of this event matches. */
    boolean matches(OutboxEvent event);

    record ByEventIds(Set<UUID> eventIds) implements ReplaySelector {
        public ByEventIds {
            eventIds = Set.copyOf(eventIds);
            if (eventIds.isEmpty()) {
                throw new IllegalArgumentException("eventIds must not be empty");
            }
        }

        @Override
        public boolean matches(OutboxEvent event) {
            return eventIds.contains(event.eventId());
        }
    }

    record ByAggregate(AggregateRef aggregate) implements ReplaySelector {
        public ByAggregate {
            Objects.requireNonNull(aggregate, "aggregate");
        }

        @Override
        public boolean matches(OutboxEvent event) {
            return aggregate.equals(event.aggregate());
        }
    }

    enum AllParked implements ReplaySelector {
        INSTANCE;

        @Override
        public boolean matches(OutboxEvent event) {
            return true;
        }
    }
}
