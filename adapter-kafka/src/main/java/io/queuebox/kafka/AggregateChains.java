package io.queuebox.kafka;

import io.queuebox.ports.AggregateRef;
import io.queuebox.ports.ClaimedDelivery;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The batch split into one queue of input positions per aggregate, each in input order. The publisher
 * sends the head of every queue at once and the next one of a queue only after its predecessor was
 * acked, so a failed message is never followed on the broker by a later one of its aggregate.
 */
final class AggregateChains {

    private AggregateChains() {
    }

    static List<Deque<Integer>> of(List<ClaimedDelivery> batch) {
        Map<AggregateRef, Deque<Integer>> chains = new LinkedHashMap<>();
        for (int i = 0; i < batch.size(); i++) {
            chains.computeIfAbsent(batch.get(i).aggregate(), a -> new ArrayDeque<>()).add(i);
        }
        return new ArrayList<>(chains.values());
    }
}
