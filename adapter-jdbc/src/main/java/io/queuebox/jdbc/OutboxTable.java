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
 * @param holdRowLocks    {@code outbox.holdRowLocks}: a claim holds its rows by row locks in a transaction kept
 *                        open until their outcomes are written, instead of writing a lease on each row
 *                        (PostgreSQL and SQL Server both can)
 */
public record OutboxTable(String schema, String table, boolean deleteOnSend, OptionalInt maxPayloadBytes,
                          boolean holdRowLocks) {

    public OutboxTable {
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(table, "table");
        Objects.requireNonNull(maxPayloadBytes, "maxPayloadBytes");
    }

    /** A table whose claims write a lease on each claimed row. */
    public OutboxTable(String schema, String table, boolean deleteOnSend, OptionalInt maxPayloadBytes) {
        this(schema, table, deleteOnSend, maxPayloadBytes, false);
    }
}
