package io.queuebox.inbox;

import io.queuebox.ports.Inbox;
import io.queuebox.testkit.inbox.InboxContract;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The PostgreSQL inbox passes the contract the in-memory inbox passes, against the real server. */
class PostgresInboxTest extends InboxContract<Connection> {

    private static InboxTestDatabase database;

    @BeforeAll
    static void createSchema() {
        database = InboxTestDatabase.withFreshSchema("inbox_contract");
    }

    @AfterAll
    static void dropSchema() {
        if (database != null) {
            database.close();
        }
    }

    @Override
    protected Inbox<Connection> newInboxOnEmptyTable() {
        database.execute("TRUNCATE " + database.inboxTable());
        return database.inbox;
    }

    @Override
    protected Connection begin() {
        try {
            Connection connection = database.dataSource.getConnection();
            connection.setAutoCommit(false);
            return connection;
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    protected void commit(Connection transaction) {
        try (transaction) {
            transaction.commit();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    protected void rollback(Connection transaction) {
        try (transaction) {
            transaction.rollback();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    protected void ageEveryEntry(Duration age) {
        database.execute("UPDATE " + database.inboxTable() + " SET processed_at = processed_at - interval '"
                + age.toSeconds() + " seconds'");
    }
}
