package io.queuebox.jdbc;

import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxWriter;
import java.sql.Connection;
import java.util.List;
import java.util.Objects;
import org.jdbi.v3.core.Handle;

/** The two OutboxWriter shapes of the SQL adapters, around the one thing that differs: the insert. */
public final class TransactionWriters {

    /** Inserts events on the caller's connection, in its transaction; never commits, rolls back or closes. */
    @FunctionalInterface
    public interface Insert {
        void write(Connection connection, List<OutboxEvent> events);
    }

    private TransactionWriters() {
    }

    /** A writer that joins the transaction of a JDBC connection. */
    public static OutboxWriter<Connection> onConnection(Insert insert) {
        Objects.requireNonNull(insert, "insert");
        return new OutboxWriter<>() {
            @Override
            public void enqueue(Connection transaction, OutboxEvent event) {
                insert.write(transaction, List.of(Objects.requireNonNull(event, "event")));
            }

            @Override
            public void enqueueAll(Connection transaction, List<OutboxEvent> events) {
                insert.write(transaction, events);
            }
        };
    }

    /** A writer that joins the transaction of a Jdbi handle. */
    public static OutboxWriter<Handle> onHandle(Insert insert) {
        Objects.requireNonNull(insert, "insert");
        return new OutboxWriter<>() {
            @Override
            public void enqueue(Handle transaction, OutboxEvent event) {
                insert.write(Objects.requireNonNull(transaction, "transaction").getConnection(),
                        List.of(Objects.requireNonNull(event, "event")));
            }

            @Override
            public void enqueueAll(Handle transaction, List<OutboxEvent> events) {
                insert.write(Objects.requireNonNull(transaction, "transaction").getConnection(), events);
            }
        };
    }
}
