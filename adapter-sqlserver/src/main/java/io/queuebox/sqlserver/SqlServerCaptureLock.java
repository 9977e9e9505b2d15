package io.queuebox.sqlserver;

import io.queuebox.jdbc.DedicatedConnectionLock;
import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureLock;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * An application lock ({@code sp_getapplock}, owner {@code Session}) on a connection of its own, kept open
 * for as long as the lock is held: the lock lives and dies with that session, so a lost connection is lost
 * ownership. Application locks are scoped to the database the connection uses.
 */
final class SqlServerCaptureLock implements DedicatedConnectionLock.Statements<String> {

    static final String RESOURCE_PREFIX = "queuebox-capture:";

    private SqlServerCaptureLock() {
    }

    static CaptureLock on(DedicatedConnectionLock.ConnectionFactory connections) {
        return new DedicatedConnectionLock<>("SqlServerCaptureLock", connections, new SqlServerCaptureLock());
    }

    /** The lock's resource name; an identity is at most 64 characters, well within sp_getapplock's 255. */
    static String resource(CaptureIdentity identity) {
        return RESOURCE_PREFIX + identity.value();
    }

    @Override
    public String lockName(CaptureIdentity identity) {
        return resource(identity);
    }

    @Override
    public boolean tryLock(Connection connection, CaptureIdentity identity, String resource) throws SQLException {
        int result;
        try (PreparedStatement statement = connection.prepareStatement(SqlServerStatements.LOCK_ACQUIRE.template())) {
            statement.setString(1, resource);
            try (ResultSet rs = statement.executeQuery()) {
                rs.next();
                result = rs.getInt("result");
            }
        }
        if (result < -1) {
            throw new IllegalStateException("could not try the capture lock of identity " + identity
                    + ": sp_getapplock returned " + result);
        }
        return result >= 0;
    }

    @Override
    public boolean isHeld(Connection connection, String resource, int timeoutSeconds) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(SqlServerStatements.LOCK_IS_HELD.template())) {
            statement.setQueryTimeout(timeoutSeconds);
            statement.setString(1, resource);
            try (ResultSet rs = statement.executeQuery()) {
                return rs.next() && "Exclusive".equals(rs.getString("mode"));
            }
        }
    }

    @Override
    public void unlock(Connection connection, String resource) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(SqlServerStatements.LOCK_RELEASE.template())) {
            statement.setString(1, resource);
            statement.execute();
        }
    }
}
