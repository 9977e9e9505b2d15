package io.queuebox.postgres;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The insert-notify trigger of schema version 4, {@code <table>_notify}: created disabled, enabled where relays
 * listen, because transactions that notify commit one at a time.
 */
final class NotifyTrigger {

    private NotifyTrigger() {
    }

    static String name(PostgresOutboxSettings settings) {
        return settings.table() + "_notify";
    }

    /** Whether the trigger fires in ordinary sessions ('O'rigin or 'A'lways; a REPLICA trigger does not); empty when the table has none (schema below version 4, or no table). */
    static Optional<Boolean> enabled(Connection connection, PostgresOutboxSettings settings) throws SQLException {
        try (PreparedStatement check = connection.prepareStatement("SELECT tgenabled IN ('O', 'A') FROM pg_catalog.pg_trigger"
                + " WHERE tgrelid = to_regclass(?) AND tgname = ?")) {
            check.setString(1, settings.qualifiedTable());
            check.setString(2, name(settings));
            try (ResultSet result = check.executeQuery()) {
                return result.next() ? Optional.of(result.getBoolean(1)) : Optional.empty();
            }
        }
    }

    /** The statement that enables ({@code true}) or disables the trigger. */
    static String alter(PostgresOutboxSettings settings, boolean enable) {
        return "ALTER TABLE " + settings.qualifiedTable() + (enable ? " ENABLE" : " DISABLE") + " TRIGGER "
                + PostgresOutboxSettings.quote(name(settings));
    }

    /**
     * Enables or disables the trigger, only when it is not so already: {@code ALTER TABLE} waits for every open
     * transaction on the table, and writers queue behind it meanwhile.
     *
     * @return whether it changed anything
     */
    static boolean set(DataSource dataSource, PostgresOutboxSettings settings, boolean enable) {
        try (Connection connection = dataSource.getConnection()) {
            Optional<Boolean> now = enabled(connection, settings);
            if (now.isEmpty()) {
                throw new IllegalStateException("the outbox table " + settings.displayName() + " has no trigger "
                        + name(settings) + ": apply V4__queuebox_insert_notify.sql first ('queuebox migrate', or your"
                        + " Flyway with " + SchemaScripts.LOCATION + ")");
            }
            if (now.get() == enable) {
                return false;
            }
            boolean autoCommit = connection.getAutoCommit();
            connection.setAutoCommit(true);
            try (Statement statement = connection.createStatement()) {
                statement.execute(alter(settings, enable));
            } finally {
                connection.setAutoCommit(autoCommit);
            }
            return true;
        } catch (SQLException e) {
            throw new IllegalStateException("could not " + (enable ? "enable" : "disable") + " the trigger "
                    + name(settings) + " of " + settings.displayName() + " (SQL state " + e.getSQLState() + "): "
                    + e.getMessage(), e);
        }
    }
}
