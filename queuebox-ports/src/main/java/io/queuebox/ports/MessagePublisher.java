package io.queuebox.ports;

import java.util.List;

/**
 * Sends claimed outbox rows to a broker and says what became of each.
 *
 * <h2>Contract</h2>
 * <ul>
 *   <li>{@link #publish} answers exactly one {@link PublishOutcome} per delivery, in the order of the
 *       input, and returns only when every outcome is known (the adapter applies its own timeouts). It
 *       never throws for a broker problem: that is a failure outcome.</li>
 *   <li>{@link PublishOutcome.Acked} only for a message the broker confirmed under the adapter's
 *       durability settings. When in doubt (timeout, connection lost before the confirm) the outcome is a
 *       {@link PublishOutcome.RetriableFailure}: the engine will send it again, and consumers deduplicate
 *       by event id.</li>
 *   <li>Order per aggregate: messages of one aggregate reach the broker in input order, and once one of
 *       them fails, no later message of that aggregate in the same call reaches the broker; those are
 *       answered {@link PublishOutcome.NotAttempted}. A retry therefore never overtakes a later event.
 *       Messages of different aggregates may be sent in parallel.</li>
 *   <li>A message that certainly never reached the broker (no connection, publisher stopped, broker known
 *       to be down) is {@link PublishOutcome.NotAttempted}: it is not charged an attempt, so an outage never
 *       parks healthy events. A failure of one destination (a missing topic, an unroutable exchange) never
 *       changes the outcome of messages to other destinations.</li>
 *   <li>One call returns within the adapter's publish timeout, whatever the number of messages and
 *       aggregates in the batch, and never hangs on an unreachable or blocked broker.</li>
 *   <li>The engine calls {@link #publish} from several worker threads at once; implementations are
 *       thread-safe.</li>
 *   <li>After {@link #close()}, {@link #publish} throws {@link IllegalStateException}. Close is
 *       idempotent.</li>
 * </ul>
 */
public interface MessagePublisher extends AutoCloseable {

    /** Publishes the batch and answers one outcome per delivery, in input order. */
    List<PublishOutcome> publish(List<ClaimedDelivery> batch);

    /** Whether the broker looks usable now, for readiness. Cheap; never blocks for long. */
    default Health health() {
        return Health.up("no health check");
    }

    /** Releases connections and threads. Messages not yet confirmed are not reported acked. */
    @Override
    void close();
}
