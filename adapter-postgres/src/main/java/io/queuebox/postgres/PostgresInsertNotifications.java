package io.queuebox.postgres;

import io.queuebox.jdbc.DedicatedConnectionLock.ConnectionFactory;
import io.queuebox.ports.InsertNotifications;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * LISTEN on the outbox table's channel ({@link PostgresOutboxSettings#notifyChannel()}), on a connection of its
 * own, waiting with pgjdbc's {@link PGConnection#getNotifications(int)}, which returns each notification as it arrives
 * ({@link PromptNotificationReads}). {@link #listen()} refuses a table
 * whose trigger of schema version 4 is missing or disabled, and a quiet session checks it again: a listener that
 * waits for notifications nobody sends would report itself healthy while delivery waits the whole
 * reconciliation interval.
 */
final class PostgresInsertNotifications implements InsertNotifications {

    /** After this long without a word from the server, a quiet wait checks that the session is alive. */
    static final Duration QUIET_CHECK = Duration.ofSeconds(10);
    private static final int CHECK_TIMEOUT_SECONDS = 5;

    private final ConnectionFactory connections;
    private final PostgresOutboxSettings settings;
    private final String channel;

    private final Duration quietCheck;
    // Why the latest session reads notifications in pgjdbc's batches (PromptNotificationReads), null when it does not.
    private volatile String readsNotPrompt;

    PostgresInsertNotifications(ConnectionFactory connections, PostgresOutboxSettings settings) {
        this(connections, settings, QUIET_CHECK);
    }

    /** {@code quietCheck} shorter than {@link #QUIET_CHECK} for tests. */
    PostgresInsertNotifications(ConnectionFactory connections, PostgresOutboxSettings settings, Duration quietCheck) {
        this.connections = Objects.requireNonNull(connections, "connections");
        this.settings = Objects.requireNonNull(settings, "settings");
        this.channel = settings.notifyChannel();
        this.quietCheck = Objects.requireNonNull(quietCheck, "quietCheck");
    }

    @Override
    public Subscription listen() {
        Connection connection = null;
        try {
            connection = connections.open();
            connection.setAutoCommit(true);
            requireTrigger(connection);
            PGConnection pg = connection.unwrap(PGConnection.class);
            try (Statement statement = connection.createStatement()) {
                statement.execute("LISTEN " + quoted(channel));
            }
            readsNotPrompt = PromptNotificationReads.apply(connection).orElse(null);
            return new Session(connection, pg);
        } catch (SQLException e) {
            closeQuietly(connection);
            throw new IllegalStateException("LISTEN " + quoted(channel) + " failed (SQL state " + e.getSQLState()
                    + "): " + e.getMessage(), e);
        } catch (RuntimeException e) {
            closeQuietly(connection);
            throw e;
        }
    }

    @Override
    public String description() {
        String notPrompt = readsNotPrompt;
        return "LISTEN " + quoted(channel) + " for inserts into " + settings.displayName() + " (PostgreSQL"
                + (notPrompt == null ? ")" : "; notifications read as pgjdbc batches them, up to tens of ms late under a"
                + " steady stream: " + notPrompt + ")");
    }

    /** Throws, saying what to run, unless the table's insert-notify trigger exists and is enabled. */
    private void requireTrigger(Connection connection) throws SQLException {
        List<NotifyTrigger.Trigger> triggers = NotifyTrigger.triggers(connection, settings);
        if (triggers.isEmpty()) {
            throw new IllegalStateException("the outbox table " + settings.displayName() + " has no trigger "
                    + NotifyTrigger.statementTrigger(settings) + ", so inserts notify nobody: run 'queuebox migrate' with"
                    + " outbox.wake.mode notify (or apply V4__queuebox_insert_notify.sql from " + SchemaScripts.LOCATION
                    + " and enable the trigger)");
        }
        if (triggers.stream().noneMatch(NotifyTrigger.Trigger::enabled)) {
            String inUse = triggers.get(0).name();
            throw new IllegalStateException("the trigger " + inUse + " of " + settings.displayName()
                    + " is disabled, so inserts notify nobody: run 'queuebox migrate' with outbox.wake.mode notify, or "
                    + NotifyTrigger.alter(settings, inUse, true));
        }
    }

    /** A double-quoted identifier: PostgreSQL folds an unquoted one to lower case and stops at the dot. */
    static String quoted(String identifier) {
        return '"' + identifier.replace("\"", "\"\"") + '"';
    }

    private static void closeQuietly(Connection connection) {
        if (connection != null) {
            try {
                connection.close();
            } catch (SQLException ignored) {
                // A broken connection can only fail to close the same way again.
            }
        }
    }

    /**
     * Adds the rows a notification's payload names (the event ids of schema version 5's trigger, comma-separated)
     * to {@code named}; answers false when it names none: empty (a statement of more than 100 rows, the trigger of
     * version 4) or anything else on the channel, which is only a wake-up.
     */
    static boolean rowsNamed(String payload, List<UUID> named) {
        if (payload == null || payload.isEmpty()) {
            return false;
        }
        List<UUID> ids = new ArrayList<>();
        for (String id : payload.split(",", -1)) {
            try {
                ids.add(UUID.fromString(id));
            } catch (IllegalArgumentException notAnId) {
                return false;
            }
        }
        named.addAll(ids);
        return true;
    }

    final class Session implements Subscription {
        private final Connection connection;
        private final PGConnection pg;
        private long lastHeardNanos = System.nanoTime();
        private volatile boolean closed;

        Session(Connection connection, PGConnection pg) {
            this.connection = connection;
            this.pg = pg;
        }

        /** Whether each call returns the notifications that have arrived rather than waiting for more. */
        boolean readsPromptly() {
            return PromptNotificationReads.applied(connection);
        }

        @Override
        public int await(Duration timeout) {
            return awaitArrivals(timeout).count();
        }

        @Override
        public Arrivals awaitArrivals(Duration timeout) {
            if (closed) {
                throw new IllegalStateException("the listening session was closed");
            }
            try {
                // 0 would wait forever.
                int millis = (int) Math.max(1, Math.min(Integer.MAX_VALUE, timeout.toMillis()));
                PGNotification[] received = pg.getNotifications(millis);
                int count = 0;
                boolean allNamed = true;
                List<UUID> named = new ArrayList<>();
                if (received != null) {
                    for (PGNotification notification : received) {
                        if (channel.equals(notification.getName())) {
                            count++;
                            allNamed &= rowsNamed(notification.getParameter(), named);
                        }
                    }
                }
                if (count > 0) {
                    lastHeardNanos = System.nanoTime();
                } else if (System.nanoTime() - lastHeardNanos > quietCheck.toNanos()) {
                    // A network that drops packets leaves a dead session that only stays quiet; and a trigger
                    // disabled since the subscription began leaves a live one that hears nothing.
                    if (!connection.isValid(CHECK_TIMEOUT_SECONDS)) {
                        throw new IllegalStateException("the listening session did not answer within "
                                + CHECK_TIMEOUT_SECONDS + " s");
                    }
                    requireTrigger(connection);
                    lastHeardNanos = System.nanoTime();
                }
                return new Arrivals(count, named, allNamed);
            } catch (SQLException e) {
                throw new IllegalStateException("the listening session was lost (SQL state " + e.getSQLState() + "): "
                        + e.getMessage(), e);
            }
        }

        @Override
        public void close() {
            if (!closed) {
                closed = true;
                closeQuietly(connection);
            }
        }
    }
}
