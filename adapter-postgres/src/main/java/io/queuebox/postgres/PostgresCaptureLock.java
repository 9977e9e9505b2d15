package io.queuebox.postgres;

import io.queuebox.jdbc.DedicatedConnectionLock;
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

/**
 * A session-level advisory lock on a connection of its own, kept open for as long as the lock is held:
 * the lock lives and dies with that backend, so a lost connection is lost ownership.
 */
final class PostgresCaptureLock implements DedicatedConnectionLock.Statements<Long> {

    private PostgresCaptureLock() {
    }

    static CaptureLock on(DedicatedConnectionLock.ConnectionFactory connections) {
        return new DedicatedConnectionLock<>("PostgresCaptureLock", connections, new PostgresCaptureLock());
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
    public Long lockName(CaptureIdentity identity) {
        return key(identity);
    }

    @Override
    public boolean tryLock(Connection connection, CaptureIdentity identity, Long key) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement("SELECT pg_try_advisory_lock(?)")) {
            statement.setLong(1, key);
            try (ResultSet rs = statement.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    @Override
    public boolean isHeld(Connection connection, Long key, int timeoutSeconds) throws SQLException {
        // An advisory lock on a bigint key shows in pg_locks as classid = high half, objid = low half, objsubid 1.
        try (PreparedStatement statement = connection.prepareStatement("SELECT count(*) FROM pg_locks"
                + " WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted"
                + " AND classid::bigint = ? AND objid::bigint = ? AND objsubid = 1")) {
            statement.setQueryTimeout(timeoutSeconds);
            statement.setLong(1, key >>> 32);
            statement.setLong(2, key & 0xFFFFFFFFL);
            try (ResultSet rs = statement.executeQuery()) {
                return rs.next() && rs.getLong(1) == 1;
            }
        }
    }

    @Override
    public void unlock(Connection connection, Long key) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement("SELECT pg_advisory_unlock(?)")) {
            statement.setLong(1, key);
            statement.execute();
        }
    }
}
