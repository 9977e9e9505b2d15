package io.queuebox.kafka;

import io.queuebox.ports.EventTemplate;
import io.queuebox.ports.OutboxEvent;

/** The topic of an event: its destination override, else the configured template or fixed topic. */
final class TopicRouter {

    private final String key;
    private final EventTemplate route;

    private TopicRouter(String key, String route) {
        this.key = key;
        this.route = EventTemplate.parse(route);
    }

    static TopicRouter of(String key, String route) {
        return new TopicRouter(key, route);
    }

    String topicFor(OutboxEvent event) {
        return event.destinationOverride().orElseGet(() -> route.render(event));
    }

    @Override
    public String toString() {
        return key + "=" + route;
    }
}
