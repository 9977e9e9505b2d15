package io.queuebox.jdbc.testing;

import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.Deque;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * Keeps closed connections open for the next caller: a minimal pool for the SQL adapters' tests, so that
 * every store call does not pay for a new database session (which, on a busy machine, eats the contract's
 * short leases). {@code target} opens the real connections, with the credentials in its URL.
 */
public final class ReusingDataSource implements DataSource, AutoCloseable {

    private final DataSource target;
    private final Deque<Connection> idle = new ConcurrentLinkedDeque<>();

    public ReusingDataSource(DataSource target) {
        this.target = Objects.requireNonNull(target, "target");
    }

    @Override
    public Connection getConnection() throws SQLException {
        Connection real = idle.pollFirst();
        while (real != null && real.isClosed()) {
            real = idle.pollFirst();
        }
        Connection connection = real != null ? real : target.getConnection();
        return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("close")) {
                        if (!connection.isClosed()) {
                            if (!connection.getAutoCommit()) {
                                connection.rollback();
                                connection.setAutoCommit(true);
                            }
                            idle.addFirst(connection);
                        }
                        return null;
                    }
                    try {
                        return method.invoke(connection, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    @Override
    public Connection getConnection(String username, String password) throws SQLException {
        throw new SQLFeatureNotSupportedException("credentials come from the URL");
    }

    @Override
    public void close() {
        for (Connection connection = idle.pollFirst(); connection != null; connection = idle.pollFirst()) {
            try {
                connection.close();
            } catch (SQLException ignored) {
                // Closing at the end of a test class; nothing else to do with a broken connection.
            }
        }
    }

    @Override
    public PrintWriter getLogWriter() {
        return null;
    }

    @Override
    public void setLogWriter(PrintWriter out) {
    }

    @Override
    public void setLoginTimeout(int seconds) {
    }

    @Override
    public int getLoginTimeout() {
        return 0;
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
        throw new SQLFeatureNotSupportedException();
    }

    @Override
    public <T> T unwrap(Class<T> type) throws SQLException {
        if (type.isInstance(this)) {
            return type.cast(this);
        }
        throw new SQLException("not a wrapper of " + type);
    }

    @Override
    public boolean isWrapperFor(Class<?> type) {
        return type.isInstance(this);
    }
}
