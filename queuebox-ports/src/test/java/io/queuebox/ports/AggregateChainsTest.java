package io.queuebox.ports;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import org.junit.jupiter.api.Test;

class AggregateChainsTest {

    private static final LeaseToken LEASE = LeaseToken.random();

    @Test
    void eachAggregateGetsItsPositionsInBatchOrderAndAggregatesKeepTheirFirstAppearance() {
        List<ClaimedDelivery> batch = List.of(delivery(1, "b"), delivery(2, "a"), delivery(3, "b"), delivery(4, "c"),
                delivery(5, "a"));

        List<Deque<Integer>> chains = AggregateChains.of(batch);

        assertThat(chains).extracting(ArrayList::new)
                .containsExactly(new ArrayList<>(List.of(0, 2)), new ArrayList<>(List.of(1, 4)), new ArrayList<>(List.of(3)));
    }

    @Test
    void theChainsAreTheCallersToConsume() {
        List<Deque<Integer>> chains = AggregateChains.of(List.of(delivery(1, "a"), delivery(2, "a")));

        assertThat(chains.get(0).poll()).isZero();
        assertThat(chains.get(0)).containsExactly(1);
        assertThat(AggregateChains.of(List.of())).isEmpty();
    }

    private static ClaimedDelivery delivery(long sequence, String aggregate) {
        OutboxEvent event = OutboxEvent.of("order", aggregate, "Placed", "{}".getBytes(StandardCharsets.UTF_8));
        return new ClaimedDelivery(sequence, event, 0, LEASE, Instant.EPOCH);
    }
}
