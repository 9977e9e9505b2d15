package io.queuebox.sqlserver;

import io.queuebox.ports.OutboxEvent;
import java.nio.charset.StandardCharsets;

/** Intention-revealing event fixtures. */
final class Events {

    private Events() {
    }

    static OutboxEvent anEventFor(String aggregateId) {
        return OutboxEvent.of("order", aggregateId, "OrderPlaced",
                ("{\"order\":\"" + aggregateId + "\"}").getBytes(StandardCharsets.UTF_8));
    }
}
