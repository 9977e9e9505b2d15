package io.queuebox.jdbc.testing;

import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxWriter;
import io.queuebox.testkit.outbox.OutboxStoreContract.UncommittedWrite;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;

/** The application side of the store contract for a SQL adapter: its writer in real JDBC transactions. */
public final class ApplicationWrites {

    private final DataSource application;
    private final OutboxWriter<Connection> writer;

    public ApplicationWrites(DataSource application, OutboxWriter<Connection> writer) {
        this.application = Objects.requireNonNull(application, "application");
        this.writer = Objects.requireNonNull(writer, "writer");
    }

    /** The events in one committed transaction. */
    public void writeCommitted(List<OutboxEvent> events) {
        try (Connection connection = application.getConnection()) {
            connection.setAutoCommit(false);
            writer.enqueueAll(connection, events);
            connection.commit();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The event in a transaction left open until the answer's commit or rollback. */
    public UncommittedWrite beginUncommittedWrite(OutboxEvent event) {
        try {
            Connection connection = application.getConnection();
            connection.setAutoCommit(false);
            writer.enqueue(connection, event);
            return new UncommittedWrite() {
                @Override
                public void commit() {
                    end(connection, true);
                }

                @Override
                public void rollback() {
                    end(connection, false);
                }
            };
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void end(Connection connection, boolean commit) {
        try (connection) {
            if (commit) {
                connection.commit();
            } else {
                connection.rollback();
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
