package io.queuebox.postgres;

import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.ports.CaptureSettings;
import io.queuebox.ports.CaptureSourceInspector;
import io.queuebox.ports.CaptureSourceReport;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;
import javax.sql.DataSource;

final class PostgresCaptureSourceInspector implements CaptureSourceInspector {

    /** PostgreSQL 15 brought publication column lists: capture needs only the event id of an inserted row. */
    private static final int COLUMN_LISTS_SINCE = 15;
    private static final String EVENT_ID = "event_id";

    private final DataSource dataSource;

    PostgresCaptureSourceInspector(DataSource dataSource) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    @Override
    public CaptureSourceReport inspect(CaptureSettings settings) {
        CaptureFingerprint f = settings.fingerprint();
        List<String> problems = new ArrayList<>();
        try (Connection connection = dataSource.getConnection()) {
            String walLevel = single(connection, "SELECT current_setting('wal_level')");
            if (!"logical".equals(walLevel)) {
                problems.add("wal_level is '" + walLevel + "' but capture needs 'logical': run ALTER SYSTEM SET"
                        + " wal_level = logical as a superuser and restart PostgreSQL.");
            }
            boolean slotExists = false;
            OptionalLong retained = OptionalLong.empty();
            // A standby has no current WAL position of its own; it measures against what it received.
            try (PreparedStatement statement = connection.prepareStatement("SELECT slot_type, plugin, database,"
                    + " pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_receive_lsn()"
                    + " ELSE pg_current_wal_lsn() END, restart_lsn)::bigint AS retained"
                    + " FROM pg_replication_slots WHERE slot_name = ?")) {
                statement.setString(1, f.slot());
                try (ResultSet rs = statement.executeQuery()) {
                    if (rs.next()) {
                        slotExists = true;
                        long bytes = rs.getLong("retained");
                        if (!rs.wasNull()) {
                            retained = OptionalLong.of(bytes);
                        }
                        if (!"logical".equals(rs.getString("slot_type")) || !"pgoutput".equals(rs.getString("plugin"))) {
                            problems.add("replication slot '" + f.slot() + "' is a " + rs.getString("slot_type")
                                    + " slot with plugin " + rs.getString("plugin") + ", but capture needs a logical"
                                    + " pgoutput slot: drop it with SELECT pg_drop_replication_slot('" + f.slot()
                                    + "') or configure another slot name.");
                        } else if (!f.database().isEmpty() && !f.database().equals(rs.getString("database"))) {
                            problems.add("replication slot '" + f.slot() + "' belongs to database '"
                                    + rs.getString("database") + "', not '" + f.database()
                                    + "': configure another slot name or drop that slot.");
                        }
                    }
                }
            }
            inspectPublication(connection, f, problems);
            return new CaptureSourceReport(slotExists, retained, problems);
        } catch (SQLException e) {
            throw new IllegalStateException("could not inspect the capture source (SQL state " + e.getSQLState()
                    + "): " + e.getMessage(), e);
        }
    }

    private static void inspectPublication(Connection connection, CaptureFingerprint f, List<String> problems)
            throws SQLException {
        String table = f.schema() + "." + f.table();
        String quotedTable = "\"" + f.schema() + "\".\"" + f.table() + "\"";
        boolean columnLists = connection.getMetaData().getDatabaseMajorVersion() >= COLUMN_LISTS_SINCE;
        String eventIdAlone = columnLists ? " (" + EVENT_ID + ")" : "";
        // One row per publication; the table's row of pg_publication_tables, if it covers the table, lists the
        // columns it publishes (every column without a column list; PostgreSQL 15 and later only).
        try (PreparedStatement statement = connection.prepareStatement("SELECT p.pubinsert,"
                + " t.tablename IS NOT NULL AS covers, " + (columnLists ? "t.attnames" : "NULL::name[]") + " AS columns"
                + " FROM pg_publication p LEFT JOIN pg_publication_tables t ON t.pubname = p.pubname"
                + " AND t.schemaname = ? AND t.tablename = ? WHERE p.pubname = ?")) {
            statement.setString(1, f.schema());
            statement.setString(2, f.table());
            statement.setString(3, f.publication());
            try (ResultSet rs = statement.executeQuery()) {
                if (!rs.next()) {
                    problems.add("publication '" + f.publication() + "' does not exist: create it with CREATE"
                            + " PUBLICATION \"" + f.publication() + "\" FOR TABLE " + quotedTable
                            + eventIdAlone + " WITH (publish = 'insert');");
                    return;
                }
                if (!rs.getBoolean("covers")) {
                    problems.add("publication '" + f.publication() + "' does not cover the outbox table " + table
                            + ": add it with ALTER PUBLICATION \"" + f.publication() + "\" ADD TABLE " + quotedTable
                            + eventIdAlone + ";");
                } else if (!publishes(rs.getArray("columns"), EVENT_ID)) {
                    // Capture would still wake delivery, but could not say which rows it saw (named wake-ups).
                    problems.add("publication '" + f.publication() + "' publishes columns of the outbox table " + table
                            + " but not " + EVENT_ID + ", which capture reads: run ALTER PUBLICATION \""
                            + f.publication() + "\" DROP TABLE " + quotedTable + "; ALTER PUBLICATION \""
                            + f.publication() + "\" ADD TABLE " + quotedTable + " (" + EVENT_ID + ");");
                }
                if (!rs.getBoolean("pubinsert")) {
                    problems.add("publication '" + f.publication() + "' does not publish inserts: run ALTER"
                            + " PUBLICATION \"" + f.publication() + "\" SET (publish = 'insert');");
                }
            }
        }
    }

    /** Whether a publication's column list names {@code column}; no list known (before PostgreSQL 15) names them all. */
    private static boolean publishes(Array columns, String column) throws SQLException {
        return columns == null || Arrays.asList((Object[]) columns.getArray()).contains(column);
    }

    private static String single(Connection connection, String query) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(query);
             ResultSet rs = statement.executeQuery()) {
            rs.next();
            return rs.getString(1);
        }
    }
}
