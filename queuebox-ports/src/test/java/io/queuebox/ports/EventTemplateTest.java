package io.queuebox.ports;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class EventTemplateTest {

    private static final OutboxEvent PLACED = OutboxEvent.of("order", "o-42", "OrderPlaced", new byte[0]);

    @Test
    void eachPlaceholderTakesTheEventsValue() {
        assertThat(EventTemplate.parse("{aggregateType}.{eventType}").render(PLACED)).isEqualTo("order.OrderPlaced");
        assertThat(EventTemplate.parse("outbox.event.{aggregateType}").render(PLACED)).isEqualTo("outbox.event.order");
        assertThat(EventTemplate.parse("{aggregateId}").render(PLACED)).isEqualTo("o-42");
        assertThat(EventTemplate.parse("a{eventType}b{aggregateType}c{aggregateId}d{eventType}").render(PLACED))
                .isEqualTo("aOrderPlacedborderco-42dOrderPlaced");
    }

    @Test
    void aNameWithoutPlaceholdersIsKeptAsIs() {
        EventTemplate fixed = EventTemplate.parse("orders");

        assertThat(fixed.render(PLACED)).isSameAs(fixed.render(PLACED)).isEqualTo("orders");
        assertThat(fixed).hasToString("orders");
    }

    @Test
    void otherBracesStayAndValuesAreNotExpandedAgain() {
        OutboxEvent tricky = OutboxEvent.of("{eventType}", "1", "Placed", new byte[0]);

        assertThat(EventTemplate.parse("{x}.{aggregateType}.{eventType").render(tricky)).isEqualTo("{x}.{eventType}.{eventType");
        assertThat(EventTemplate.parse("{{aggregateType}}").render(PLACED)).isEqualTo("{order}");
        assertThat(EventTemplate.parse("").render(PLACED)).isEmpty();
    }
}
