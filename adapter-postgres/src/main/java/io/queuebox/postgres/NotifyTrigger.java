package io.queuebox.postgres;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * The insert-notify triggers: schema version 5's row trigger {@code <table>_notify_rows}, which names each row it
 * notifies, and version 4's statement trigger {@code <table>_notify}, which names none. Version 5 switches from the
 * second to the first; only one of them is enabled at a time. Created disabled, enabled where relays listen,
 * because transactions that notify commit one at a time.
 */
final class NotifyTrigger {

    private NotifyTrigger() {
    }

    /** Version 4's statement trigger. */
    static String statementTrigger(PostgresOutboxSettings settings) {
        return settings.table() + "_notify";
    }

    /** Version 5's row trigger. */
    static String rowTrigger(PostgresOutboxSettings settings) {
        return settings.table() + "_notify_rows";
    }

    /**
     * The table's notify triggers, the one in use first (version 5's where it exists); empty when the table has neither
     * (schema below version 4, or no table).
     */
    static List<Trigger> triggers(Connection connection, PostgresOutboxSettings settings) throws SQLException {
        try (PreparedStatement check = connection.prepareStatement("SELECT tgname, tgenabled::text"
                + " FROM pg_catalog.pg_trigger WHERE tgrelid = to_regclass(?) AND tgname IN (?, ?) ORDER BY tgname = ? DESC")) {
            check.setString(1, settings.qualifiedTable());
            check.setString(2, rowTrigger(settings));
            check.setString(3, statementTrigger(settings));
            check.setString(4, rowTrigger(settings));
            List<Trigger> triggers = new ArrayList<>();
            try (ResultSet result = check.executeQuery()) {
                while (result.next()) {
                    triggers.add(new Trigger(result.getString(1), result.getString(2)));
                }
            }
            return triggers;
        }
    }

    /** The statement that enables ({@code true}) or disables the trigger {@code name}. */
    static String alter(PostgresOutboxSettings settings, String name, boolean enable) {
        return "ALTER TABLE " + settings.qualifiedTable() + (enable ? " ENABLE" : " DISABLE") + " TRIGGER "
                + PostgresOutboxSettings.quote(name);
    }

    /**
     * Enables or disables notifications: the trigger in use, with version 4's kept disabled beside version 5's (both
     * would notify every commit twice). Only what is not so already: {@code ALTER TABLE} waits for every open
     * transaction that writes the table, and writers queue behind it meanwhile.
     *
     * @return whether it changed anything
     */
    static boolean set(DataSource dataSource, PostgresOutboxSettings settings, boolean enable) {
        try (Connection connection = dataSource.getConnection()) {
            List<Trigger> triggers = triggers(connection, settings);
            if (triggers.isEmpty()) {
                throw new IllegalStateException("the outbox table " + settings.displayName() + " has no trigger "
                        + statementTrigger(settings) + ": apply V4__queuebox_insert_notify.sql first ('queuebox migrate',"
                        + " or your Flyway with " + SchemaScripts.LOCATION + ")");
            }
            List<String> changes = new ArrayList<>();
            for (int i = 0; i < triggers.size(); i++) {
                boolean wanted = enable && i == 0;
                // Disabled means 'D': a REPLICA trigger is not enabled for ordinary sessions, nor disabled for replicas.
                if (wanted ? !triggers.get(i).enabled() : !triggers.get(i).disabled()) {
                    changes.add(alter(settings, triggers.get(i).name(), wanted));
                }
            }
            if (changes.isEmpty()) {
                return false;
            }
            boolean autoCommit = connection.getAutoCommit();
            connection.setAutoCommit(false);
            try (Statement statement = connection.createStatement()) {
                for (String change : changes) {
                    statement.execute(change);
                }
                connection.commit();
            } catch (SQLException e) {
                connection.rollback();
                throw e;
            } finally {
                connection.setAutoCommit(autoCommit);
            }
            return true;
        } catch (SQLException e) {
            throw new IllegalStateException("could not " + (enable ? "enable" : "disable") + " the insert-notify trigger"
                    + " of " + settings.displayName() + " (SQL state " + e.getSQLState() + "): " + e.getMessage(), e);
        }
    }

    /** A notify trigger and its {@code pg_trigger.tgenabled}. */
    record Trigger(String name, String state) {

        /** Fires in ordinary sessions: 'O'rigin or 'A'lways (a REPLICA trigger does not). */
        boolean enabled() {
            return state.equals("O") || state.equals("A");
        }

        /** Fires in no session. */
        boolean disabled() {
            return state.equals("D");
        }
    }
}
