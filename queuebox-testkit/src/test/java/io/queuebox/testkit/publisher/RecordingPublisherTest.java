package io.queuebox.testkit.publisher;

import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.OutboxEvent;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.awaitility.Awaitility;

/** The recording publisher keeps the publisher contract, so engine tests with it mean something. */
class RecordingPublisherTest extends MessagePublisherContract {

    private static final String POISON_HEADER = "x-test-poison";

    private RecordingPublisher broker;

    @Override
    protected MessagePublisher newPublisher() {
        broker = RecordingPublisher.acking();
        broker.when(delivery -> delivery.event().headers().containsKey(POISON_HEADER))
                .failPermanently("rejected by the broker");
        return broker;
    }

    @Override
    protected MessagePublisher newPublisherForUnreachableBroker() {
        RecordingPublisher unreachable = RecordingPublisher.acking();
        unreachable.when(delivery -> true).skip("connection refused");
        return unreachable;
    }

    @Override
    protected List<ReceivedMessage> awaitReceived(int count, Duration timeout) {
        try {
            Awaitility.await().atMost(timeout).until(() -> broker.deliveredCount() >= count);
        } catch (org.awaitility.core.ConditionTimeoutException e) {
            // The contract asserts on what arrived.
        }
        return broker.received();
    }

    @Override
    protected OutboxEvent poisonOf(OutboxEvent event) {
        return event.withHeaders(Map.of(POISON_HEADER, "yes"));
    }
}
