package io.queuebox.ports;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The ordering helper of the built-in publishers, for the authors of other {@link MessagePublisher}s: a batch
 * split into one chain per aggregate, each chain the positions of its messages in batch order.
 *
 * <p>A publisher that keeps per-aggregate order sends the head of every chain at once (aggregates are
 * independent) and the next message of a chain only after its predecessor was acknowledged. When a message
 * fails, the rest of its chain is answered as not attempted, so a failed message is never followed on the
 * broker by a later one of its aggregate ({@code MessagePublisherContract} checks exactly this).
 *
 * <pre>{@code
 * for (Deque<Integer> chain : AggregateChains.of(batch)) {
 *     sendNext(chain);            // send batch.get(chain.poll()); on its ack, sendNext(chain) again
 * }
 * }</pre>
 */
public final class AggregateChains {

    private AggregateChains() {
    }

    /**
     * The chains of {@code batch}, in the order each aggregate first appears; every chain is a fresh, mutable
     * queue of positions into {@code batch}, in increasing order.
     */
    public static List<Deque<Integer>> of(List<ClaimedDelivery> batch) {
        Map<AggregateRef, Deque<Integer>> chains = new LinkedHashMap<>();
        for (int i = 0; i < batch.size(); i++) {
            chains.computeIfAbsent(batch.get(i).aggregate(), a -> new ArrayDeque<>()).add(i);
        }
        return new ArrayList<>(chains.values());
    }
}
