package io.queuebox.jdbc;

import java.util.Objects;
import java.util.OptionalInt;

/**
 * Where the outbox lives and how the relay treats it, the same on every database: what the bootstrap
 * reads from configuration and hands to a {@link DatabaseProvider}, which validates it by its own rules.
 *
 * @param schema          {@code outbox.schema}
 * @param table           {@code outbox.table}
 * @param deleteOnSend    {@code outbox.deleteOnSend}
 * @param maxPayloadBytes {@code outbox.maxPayloadBytes} when the operator set it; empty leaves the writer's
 *                        default and makes the store park nothing for its size
 */
public record OutboxTable(String schema, String table, boolean deleteOnSend, OptionalInt maxPayloadBytes) {

    public OutboxTable {
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(table, "table");
        Objects.requireNonNull(maxPayloadBytes, "maxPayloadBytes");
    }
}
