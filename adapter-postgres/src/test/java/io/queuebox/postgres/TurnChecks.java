package io.queuebox.postgres;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/** What the turn reviews check after relays drained a table: who holds the turn, what is left, and order. */
final class TurnChecks {

    private final TestDatabase db;
    private final PostgresOutboxSettings settings;

    TurnChecks(TestDatabase db, PostgresOutboxSettings settings) {
        this.db = db;
        this.settings = settings;
    }

    /** Sessions that hold the turn among processes, with their pid and state. */
    List<String> turnHolders() throws SQLException {
        try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT l.pid || ' ' || coalesce(a.state, '?') FROM pg_locks l"
                     + " LEFT JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted"
                     + " AND l.classid = " + OutboxSql.CHOICE_TURN_LOCK_KEY + " AND l.objid = '"
                     + settings.qualifiedTable() + "'::regclass::oid AND l.objsubid = 2")) {
            List<String> holders = new ArrayList<>();
            while (rs.next()) {
                holders.add(rs.getString(1));
            }
            return holders;
        }
    }

    /** The holders once a session that was ended has had time to go (at most {@code millis}). */
    List<String> turnHoldersAfter(long millis) throws Exception {
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        List<String> holders = turnHolders();
        while (!holders.isEmpty() && System.nanoTime() < until) {
            Thread.sleep(10);
            holders = turnHolders();
        }
        return holders;
    }

    int pending() throws SQLException {
        try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM " + settings.qualifiedTable() + " WHERE status = 'pending'")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    /** The first delivered row with an earlier unsent sibling outside the batch, described; else null. */
    String earlierOutside(Connection check, List<UUID> ids) throws SQLException {
        String list = ids.stream().map(id -> "'" + id + "'").collect(Collectors.joining(", "));
        try (Statement s = check.createStatement();
             ResultSet rs = s.executeQuery("SELECT d.seq, d.aggregate_id, e.seq, e.status FROM " + settings.qualifiedTable()
                     + " d JOIN " + settings.qualifiedTable() + " e ON e.aggregate_type = d.aggregate_type"
                     + " AND e.aggregate_id = d.aggregate_id AND e.seq < d.seq WHERE d.event_id IN (" + list + ")"
                     + " AND e.status <> 'sent' AND e.event_id NOT IN (" + list + ") ORDER BY d.seq LIMIT 1")) {
            if (rs.next()) {
                return "handed out seq " + rs.getLong(1) + " of " + rs.getString(2) + " while seq " + rs.getLong(3)
                        + " was " + rs.getString(4) + " outside the batch";
            }
        }
        return null;
    }
}
