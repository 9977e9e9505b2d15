package io.queuebox.bootstrap.plugin;

import io.queuebox.ports.AggregateChains;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.MessagePublisherProvider;
import io.queuebox.ports.PublishOutcome;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.Map;

/**
 * A custom broker adapter as a user writes one, depending on the ports only: PluginsIT packs it into a jar of
 * its own (it is deliberately not listed in this module's META-INF/services) and puts it in the plug-in folder.
 */
public final class EchoPublisherProvider implements MessagePublisherProvider {

    @Override
    public String name() {
        return "echo";
    }

    @Override
    public MessagePublisher create(Map<String, String> settings) {
        return new MessagePublisher() {
            @Override
            public List<PublishOutcome> publish(List<ClaimedDelivery> batch) {
                PublishOutcome[] outcomes = new PublishOutcome[batch.size()];
                // Each chain in order, as a broker with confirms would: here every message is acked at once.
                for (Deque<Integer> chain : AggregateChains.of(batch)) {
                    for (Integer position = chain.poll(); position != null; position = chain.poll()) {
                        outcomes[position] = PublishOutcome.acked(batch.get(position).event().eventId());
                    }
                }
                return new ArrayList<>(Arrays.asList(outcomes));
            }

            @Override
            public void close() {
            }
        };
    }
}
