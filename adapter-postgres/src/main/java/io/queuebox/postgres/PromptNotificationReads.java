package io.queuebox.postgres;

import java.lang.reflect.Field;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Optional;
import org.postgresql.core.BaseConnection;

/**
 * Makes pgjdbc's {@code getNotifications(timeout)} on a listening session return the notifications that have arrived
 * instead of waiting for more. After each message pgjdbc asks whether another is pending, and that check waits up to
 * 1 ms on the socket for one (pgjdbc issue 1547): under a steady stream, a notification every millisecond or so, one
 * call kept reading and returned its notifications together, the first of them tens of milliseconds late. Measured on
 * 2026-12-05, 1,000 one-row commits a second, commit to notification returned: p50 5.6-9.2 ms and p99 52-78 ms; with
 * this, p50 0.03-0.05 ms and p99 2.6-3.0 ms, as libpq (psycopg2) on the same notifications.
 *
 * <p>The check skips the wait until a time pgjdbc keeps on the connection's stream ({@code PGStream}); this sets
 * that time to the end of time. A read of the first message still waits the call's timeout, and bytes that have
 * arrived are still read in the same call; nothing else on a listening session asks whether a message is pending
 * (only {@code processNotifies} and COPY do). Reflection on pgjdbc's internals: when they change, the session keeps
 * pgjdbc's own behaviour and {@link #apply} says why, rather than failing to listen.
 */
final class PromptNotificationReads {

    private PromptNotificationReads() {
    }

    /** Applies it to {@code connection}: empty when applied, else why not. */
    static Optional<String> apply(Connection connection) {
        try {
            Object stream = stream(connection);
            field(stream.getClass(), "nextStreamAvailableCheckTime").setLong(stream, Long.MAX_VALUE);
            return Optional.empty();
        } catch (SQLException | ReflectiveOperationException | RuntimeException | LinkageError e) {
            // LinkageError: a pgjdbc whose module does not export org.postgresql.core; the session must still listen.
            return Optional.of(e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }

    /**
     * Whether {@link #apply} took on {@code connection}: the time is set, and pgjdbc honours it (it checks every time
     * when the least delay between checks is 0, as its replication streams set it).
     */
    static boolean applied(Connection connection) {
        try {
            Object stream = stream(connection);
            return field(stream.getClass(), "nextStreamAvailableCheckTime").getLong(stream) == Long.MAX_VALUE
                    && field(stream.getClass(), "minStreamAvailableCheckDelay").getInt(stream) != 0;
        } catch (SQLException | ReflectiveOperationException | RuntimeException | LinkageError e) {
            return false;
        }
    }

    /** pgjdbc's {@code PGStream} of {@code connection}. */
    private static Object stream(Connection connection) throws SQLException, ReflectiveOperationException {
        Object executor = connection.unwrap(BaseConnection.class).getQueryExecutor();
        return field(executor.getClass(), "pgStream").get(executor);
    }

    private static Field field(Class<?> type, String name) throws NoSuchFieldException {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            try {
                Field field = c.getDeclaredField(name);
                field.setAccessible(true);
                return field;
            } catch (NoSuchFieldException notHere) {
                // declared higher up
            }
        }
        throw new NoSuchFieldException(type.getName() + " has no field " + name);
    }
}
