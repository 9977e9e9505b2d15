package io.queuebox.postgres;

import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.OutboxWriter;
import io.queuebox.testkit.outbox.OutboxStoreContract;
import io.queuebox.testkit.services.TestServices;
import io.queuebox.jdbc.testing.ReusingDataSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

/**
 * The store contract against real PostgreSQL, unchanged; each relay reaches the table through its own
 * connections, and the out-of-order commit is two real concurrent transactions.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PostgresOutboxStoreTest extends OutboxStoreContract {

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private OutboxWriter<Connection> writer;
    private ReusingDataSource firstRelay;
    private ReusingDataSource secondRelay;
    private ReusingDataSource application;

    @BeforeAll
    void schema() {
        db = TestDatabase.withFreshSchema("contract");
        settings = configure(db.settings()).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        writer = PostgresOutbox.jdbcWriter(settings);
        firstRelay = TestDatabase.reusing(TestServices.postgresUrl(), "queuebox-first-relay");
        secondRelay = TestDatabase.reusing(TestServices.postgresUrl(), "queuebox-second-relay");
        application = TestDatabase.reusing(TestServices.postgresUrl(), "queuebox-application");
    }

    @AfterAll
    void drop() {
        firstRelay.close();
        secondRelay.close();
        application.close();
        db.close();
    }

    /** The store's settings beyond its test schema. */
    PostgresOutboxSettings.Builder configure(PostgresOutboxSettings.Builder builder) {
        return builder;
    }

    private PostgresOutboxSettings settings() {
        return settings;
    }

    @Override
    protected OutboxStore newStoreOnEmptyOutbox() {
        db.execute("TRUNCATE " + settings().qualifiedTable());
        return PostgresOutbox.store(firstRelay, settings());
    }

    @Override
    protected OutboxStore secondStoreOnSameOutbox() {
        return PostgresOutbox.store(secondRelay, settings());
    }

    @Override
    protected void writeCommitted(List<OutboxEvent> events) {
        try (Connection connection = application.getConnection()) {
            connection.setAutoCommit(false);
            writer.enqueueAll(connection, events);
            connection.commit();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    protected UncommittedWrite beginUncommittedWrite(OutboxEvent event) {
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
