package io.queuebox.domain;

import io.queuebox.ports.AggregateRef;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.OutboxEvent;
import java.nio.charset.StandardCharsets;
import java.time.Instant;

/** Intention-revealing builders for the domain's tests. */
final class Fixtures {

    static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
    static final LeaseToken A_LEASE = LeaseToken.random();

    private Fixtures() {
    }

    static AggregateRef order(String id) {
        return new AggregateRef("order", id);
    }

    static OutboxEvent anEventFor(AggregateRef aggregate) {
        return OutboxEvent.of(aggregate.type(), aggregate.id(), "Changed", "{}".getBytes(StandardCharsets.UTF_8));
    }

    static ClaimedDelivery aDelivery(long sequence, AggregateRef aggregate) {
        return aDelivery(sequence, aggregate, 0);
    }

    static ClaimedDelivery aDelivery(long sequence, AggregateRef aggregate, int attempts) {
        return new ClaimedDelivery(sequence, anEventFor(aggregate), attempts, A_LEASE, T0);
    }
}
