package io.queuebox.spring;

import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxWriter;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Writes events in the application's current Spring transaction: on the connection that
 * {@link DataSourceUtils#getConnection} binds to it (the one {@code JdbcTemplate}, {@code JdbcClient} and JPA's
 * JDBC work use), so they commit or roll back with the business change. After the commit, and only then,
 * delivery is woken, so the event is claimed at once instead of at the next poll.
 *
 * <pre>{@code
 * @Transactional
 * public void place(Order order) {
 *     jdbc.update("INSERT INTO orders ...", ...);
 *     outbox.enqueue(OutboxEvent.of("order", order.id(), "OrderPlaced", json));
 * }
 * }</pre>
 */
public class TransactionalOutboxWriter {

    private final DataSource dataSource;
    private final OutboxWriter<Connection> writer;
    private final QueueBoxRelay relay;

    public TransactionalOutboxWriter(DataSource dataSource, OutboxWriter<Connection> writer, QueueBoxRelay relay) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        this.writer = Objects.requireNonNull(writer, "writer");
        this.relay = Objects.requireNonNull(relay, "relay");
    }

    /**
     * Adds the event to the outbox in the current transaction.
     *
     * @throws IllegalStateException when no Spring transaction is active (the event would commit on its own,
     *                               without the business change)
     */
    public void enqueue(OutboxEvent event) {
        Objects.requireNonNull(event, "event");
        enqueueAll(List.of(event));
    }

    /** {@link #enqueue} for several events, in their order. */
    public void enqueueAll(List<OutboxEvent> events) {
        Objects.requireNonNull(events, "events");
        if (!TransactionSynchronizationManager.isActualTransactionActive()
                || !TransactionSynchronizationManager.isSynchronizationActive()) {
            throw new IllegalStateException("QueueBox writes events in the current Spring transaction, and none is"
                    + " active: call TransactionalOutboxWriter from a @Transactional method (or a TransactionTemplate)"
                    + " that also makes the business change, so both commit together or not at all");
        }
        if (!(TransactionSynchronizationManager.getResource(dataSource) instanceof ConnectionHolder holder)
                || !holder.isSynchronizedWithTransaction()) {
            // A transaction of another resource (another DataSource, JMS): a connection taken now would auto-commit.
            throw new IllegalStateException("QueueBox writes events in the current Spring transaction, but that"
                    + " transaction does not manage QueueBox's DataSource: use a DataSourceTransactionManager or"
                    + " JpaTransactionManager on the DataSource that holds the outbox table");
        }
        Connection connection = DataSourceUtils.getConnection(dataSource);
        try {
            writer.enqueueAll(connection, events);
        } finally {
            DataSourceUtils.releaseConnection(connection, dataSource);
        }
        wakeAfterCommit(events);
    }

    /**
     * One wake-up per transaction, naming every event it wrote: the engine then knows when an idle worker took
     * them, and a busy one need not look again for them. The wake-up is a synchronization of the transaction, so
     * a transaction suspended for an inner {@code REQUIRES_NEW} one keeps its own, and the inner one gets its own.
     */
    private void wakeAfterCommit(List<OutboxEvent> events) {
        for (TransactionSynchronization registered : TransactionSynchronizationManager.getSynchronizations()) {
            if (registered instanceof WakeAfterCommit wake && wake.writer() == this) {
                events.forEach(event -> wake.eventIds().add(event.eventId()));
                return;
            }
        }
        WakeAfterCommit wake = new WakeAfterCommit(this, new ArrayList<>());
        events.forEach(event -> wake.eventIds().add(event.eventId()));
        TransactionSynchronizationManager.registerSynchronization(wake);
    }

    /** Compared by identity: Spring keeps synchronizations in a set, and the ids grow after registration. */
    private static final class WakeAfterCommit implements TransactionSynchronization {
        private final TransactionalOutboxWriter writer;
        private final List<UUID> eventIds;

        WakeAfterCommit(TransactionalOutboxWriter writer, List<UUID> eventIds) {
            this.writer = writer;
            this.eventIds = eventIds;
        }

        TransactionalOutboxWriter writer() {
            return writer;
        }

        List<UUID> eventIds() {
            return eventIds;
        }

        @Override
        public void afterCommit() {
            writer.relay.wakeFor(eventIds);
        }
    }
}
