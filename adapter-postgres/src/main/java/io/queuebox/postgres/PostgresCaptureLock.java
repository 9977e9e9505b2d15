package io.queuebox.postgres;

import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureLock;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Objects;
import java.util.Optional;

/**
 * A session-level advisory lock on a connection of its own, kept open for as long as the lock is held:
 * the lock lives and dies with that backend, so a lost connection is lost ownership.
 */
final class PostgresCaptureLock implements CaptureLock {

    /** Opens a new dedicated connection; never one from a pool that could hand it to someone else. */
    interface ConnectionFactory {
        Connection open() throws SQLException;
    }

    private static final int CHECK_TIMEOUT_SECONDS = 5;

    private final ConnectionFactory connections;

    PostgresCaptureLock(ConnectionFactory connections) {
        this.connections = Objects.requireNonNull(connections, "connections");
    }

    /**
     * A stable 64-bit key: the first 8 bytes of SHA-256 over a prefixed identity. Computed here rather than
     * with PostgreSQL's hashtext, whose results are not promised to stay the same across major versions.
     */
    static long key(CaptureIdentity identity) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256")
                    .digest(("queuebox-capture:" + identity.value()).getBytes(StandardCharsets.UTF_8));
            return ByteBuffer.wrap(digest, 0, 8).getLong();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }

    @Override
    public Optional<Held> tryAcquire(CaptureIdentity identity) {
        long key = key(identity);
        Connection connection = null;
        try {
            connection = connections.open();
            connection.setAutoCommit(true);
            try (PreparedStatement statement = connection.prepareStatement("SELECT pg_try_advisory_lock(?)")) {
                statement.setLong(1, key);
                try (ResultSet rs = statement.executeQuery()) {
                    rs.next();
                    if (rs.getBoolean(1)) {
                        return Optional.of(new HeldLock(connection, identity, key));
                    }
                }
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

    private static final class HeldLock implements Held {
        private final Connection connection;
        private final CaptureIdentity identity;
        private final long key;
        private volatile boolean closed;

        HeldLock(Connection connection, CaptureIdentity identity, long key) {
            this.connection = connection;
            this.identity = identity;
            this.key = key;
        }

        @Override
        public synchronized boolean isHeld() {
            if (closed) {
                return false;
            }
            // An advisory lock on a bigint key shows in pg_locks as classid = high half, objid = low half, objsubid 1.
            try (PreparedStatement statement = connection.prepareStatement("SELECT count(*) FROM pg_locks"
                    + " WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted"
                    + " AND classid::bigint = ? AND objid::bigint = ? AND objsubid = 1")) {
                statement.setQueryTimeout(CHECK_TIMEOUT_SECONDS);
                statement.setLong(1, key >>> 32);
                statement.setLong(2, key & 0xFFFFFFFFL);
                try (ResultSet rs = statement.executeQuery()) {
                    return rs.next() && rs.getLong(1) == 1;
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
            // Closing the session releases the lock even when the unlock cannot run.
            try (PreparedStatement statement = connection.prepareStatement("SELECT pg_advisory_unlock(?)")) {
                statement.setLong(1, key);
                statement.execute();
            } catch (SQLException ignored) {
                // The session is gone already, and the lock with it.
            } finally {
                closeQuietly(connection);
            }
        }

        @Override
        public String toString() {
            return "PostgresCaptureLock.Held[" + identity + "]";
        }
    }
}
