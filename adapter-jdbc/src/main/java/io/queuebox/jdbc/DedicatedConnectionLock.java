package io.queuebox.jdbc;

import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureLock;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;

/**
 * A session lock on a connection of its own, kept open for as long as the lock is held: the lock lives and
 * dies with that session, so a lost connection is lost ownership. The database's statements come from
 * {@link Statements}; opening, closing and the state of a held lock are the same for every database.
 *
 * @param <K> the database's name for the lock (a number, a resource name)
 */
public final class DedicatedConnectionLock<K> implements CaptureLock {

    /** Opens a new dedicated connection; never one from a pool that could hand it to someone else. */
    @FunctionalInterface
    public interface ConnectionFactory {
        Connection open() throws SQLException;

        /** Connections opened from a JDBC URL; {@code properties} (credentials) are copied, may be null. */
        static ConnectionFactory fromUrl(String jdbcUrl, Properties properties) {
            Objects.requireNonNull(jdbcUrl, "jdbcUrl");
            Properties copy = new Properties();
            if (properties != null) {
                copy.putAll(properties);
            }
            return () -> DriverManager.getConnection(jdbcUrl, copy);
        }
    }

    /** What one database runs to take, check and give back a session lock. */
    public interface Statements<K> {
        K lockName(CaptureIdentity identity);

        /** True when taken, false when another session holds it; a runtime exception for anything else. */
        boolean tryLock(Connection connection, CaptureIdentity identity, K key) throws SQLException;

        /** Whether this session still holds the lock, answering within {@code timeoutSeconds}. */
        boolean isHeld(Connection connection, K key, int timeoutSeconds) throws SQLException;

        void unlock(Connection connection, K key) throws SQLException;
    }

    private static final int CHECK_TIMEOUT_SECONDS = 5;

    private final String name;
    private final ConnectionFactory connections;
    private final Statements<K> statements;

    /** {@code name} shows in the held lock's {@code toString}. */
    public DedicatedConnectionLock(String name, ConnectionFactory connections, Statements<K> statements) {
        this.name = Objects.requireNonNull(name, "name");
        this.connections = Objects.requireNonNull(connections, "connections");
        this.statements = Objects.requireNonNull(statements, "statements");
    }

    @Override
    public Optional<Held> tryAcquire(CaptureIdentity identity) {
        K key = statements.lockName(identity);
        Connection connection = null;
        try {
            connection = connections.open();
            connection.setAutoCommit(true);
            boolean taken;
            try {
                taken = statements.tryLock(connection, identity, key);
            } catch (RuntimeException e) {
                closeQuietly(connection);
                throw e;
            }
            if (taken) {
                return Optional.of(new HeldLock(connection, identity, key));
            }
            connection.close();
            return Optional.empty();
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

    private final class HeldLock implements Held {
        private final Connection connection;
        private final CaptureIdentity identity;
        private final K key;
        private volatile boolean closed;

        HeldLock(Connection connection, CaptureIdentity identity, K key) {
            this.connection = connection;
            this.identity = identity;
            this.key = key;
        }

        @Override
        public synchronized boolean isHeld() {
            if (closed) {
                return false;
            }
            try {
                return statements.isHeld(connection, key, CHECK_TIMEOUT_SECONDS);
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
            // Closing the session releases the lock even when the unlock cannot run.
            try {
                statements.unlock(connection, key);
            } catch (SQLException ignored) {
                // The session is gone already, and the lock with it.
            } finally {
                closeQuietly(connection);
            }
        }

        @Override
        public String toString() {
            return name + ".Held[" + identity + "]";
        }
    }
}
