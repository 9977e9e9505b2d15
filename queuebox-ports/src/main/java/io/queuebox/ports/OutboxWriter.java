package io.queuebox.ports;

import java.util.List;

/**
 * What the application calls inside its own transaction to put events into the outbox.
 *
 * <p>{@code T} is the caller's transaction handle: a JDBC {@code Connection}, a Jdbi {@code Handle}, or
 * whatever the adapter supports. The writer joins that transaction: it never commits, rolls back or
 * closes the handle, so the events exist exactly when the caller's business change commits.
 *
 * <p>Errors are reported as {@link IllegalArgumentException} for a bad event (naming the field at
 * fault) and as {@link OutboxWriteException} when the database refuses the insert (for example a
 * missing outbox table, named in the message).
 *
 * @param <T> the transaction handle type
 */
public interface OutboxWriter<T> {

    /** Inserts one event in the caller's transaction. */
    void enqueue(T transaction, OutboxEvent event);

    /**
     * Inserts the events in the caller's transaction, in list order (which becomes their delivery order
     * within each aggregate), using as few statements as the database allows.
     */
    void enqueueAll(T transaction, List<OutboxEvent> events);
}
