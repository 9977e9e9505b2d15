package io.queuebox.sqlserver;

import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureLock;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Objects;
import java.util.Optional;

/**
 * An application lock ({@code sp_getapplock}, owner {@code Session}) on a connection of its own, kept open
 * for as long as the lock is held: the lock lives and dies with that session, so a lost connection is lost
 * ownership. Application locks are scoped to the database the connection uses.
 */
final class SqlServerCaptureLock implements CaptureLock {

    /** Opens a new dedicated connection; never one from a pool that could hand it to someone else. */
    interface ConnectionFactory {
        Connection open() throws SQLException;
    }

    static final String RESOURCE_PREFIX = "queuebox-capture:";
    private static final int CHECK_TIMEOUT_SECONDS = 5;

    private final ConnectionFactory connections;

    SqlServerCaptureLock(ConnectionFactory connections) {
        this.connections = Objects.requireNonNull(connections, "connections");
    }

    /** The lock's resource name; an identity is at most 64 characters, well within sp_getapplock's 255. */
    static String resource(CaptureIdentity identity) {
        return RESOURCE_PREFIX + identity.value();
    }

    @Override
    public Optional<Held> tryAcquire(CaptureIdentity identity) {
        String resource = resource(identity);
        Connection connection = null;
        try {
            connection = connections.open();
            connection.setAutoCommit(true);
            int result;
            try (PreparedStatement statement = connection.prepareStatement(SqlServerStatements.LOCK_ACQUIRE.template())) {
                statement.setString(1, resource);
                try (ResultSet rs = statement.executeQuery()) {
                    rs.next();
                    result = rs.getInt("result");
                }
            }
            if (result >= 0) {
                return Optional.of(new HeldLock(connection, identity, resource));
            }
            connection.close();
            if (result == -1) {
                return Optional.empty();
            }
            throw new IllegalStateException("could not try the capture lock of identity " + identity
                    + ": sp_getapplock returned " + result);
        } catch (SQLException e) {
            closeQuietly(connection);
            throw new IllegalStateException("could not try the capture lock of identity " + identity
                    + " (SQL state " + e.getSQLState() + "): " + e.getMessage(), e);
        }
    }

    private static void closeQuietly(Connection connection) {
        if (connection != null) {
            try {
                connection.close();
            } catch (SQLException ignored) {
                // Closing a broken connection can only fail the same way again.
            }
        }
    }

    private static final class HeldLock implements Held {
        private final Connection connection;
        private final CaptureIdentity identity;
        private final String resource;
        private volatile boolean closed;

        HeldLock(Connection connection, CaptureIdentity identity, String resource) {
            this.connection = connection;
            this.identity = identity;
            this.resource = resource;
        }

        @Override
        public synchronized boolean isHeld() {
            if (closed) {
                return false;
            }
            try (PreparedStatement statement = connection.prepareStatement(SqlServerStatements.LOCK_IS_HELD.template())) {
                statement.setQueryTimeout(CHECK_TIMEOUT_SECONDS);
                statement.setString(1, resource);
                try (ResultSet rs = statement.executeQuery()) {
                    return rs.next() && "Exclusive".equals(rs.getString("mode"));
                }
            } catch (SQLException e) {
                return false;
            }
        }

        @Override
        public synchronized void close() {
            if (closed) {
                return;
            }
            closed = true;
            // Closing the session releases the lock even when the release cannot run.
            try (PreparedStatement statement = connection.prepareStatement(SqlServerStatements.LOCK_RELEASE.template())) {
                statement.setString(1, resource);
                statement.execute();
            } catch (SQLException ignored) {
                // The session is gone already, and the lock with it.
            } finally {
                closeQuietly(connection);
            }
        }

        @Override
        public String toString() {
            return "SqlServerCaptureLock.Held[" + identity + "]";
        }
    }
}
