package io.queuebox.inbox;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The business table the consumers in the broker tests write to: one row per time an event's handler committed,
 * with no unique key of its own, so a second application of an event shows as a second row.
 */
public final class Effects {

    private final DataSource dataSource;
    private final String table;

    public Effects(DataSource dataSource, String table) {
        this.dataSource = dataSource;
        this.table = table;
    }

    /** The business write, through the inbox's transaction. */
    public void apply(Connection transaction, UUID eventId, String aggregateId, String handledBy) throws SQLException {
        try (PreparedStatement insert = transaction.prepareStatement(
                "INSERT INTO " + table + " (event_id, aggregate_id, handled_by) VALUES (?, ?, ?)")) {
            insert.setObject(1, eventId);
            insert.setString(2, aggregateId);
            insert.setString(3, handledBy);
            insert.executeUpdate();
        }
    }

    /** Each aggregate's applied event ids, in the order their rows were written. */
    public Map<String, List<UUID>> appliedPerAggregate() {
        Map<String, List<UUID>> applied = new LinkedHashMap<>();
        query("SELECT aggregate_id, event_id FROM " + table + " ORDER BY seq", rows -> {
            while (rows.next()) {
                applied.computeIfAbsent(rows.getString(1), k -> new ArrayList<>()).add(rows.getObject(2, UUID.class));
            }
        });
        return applied;
    }

    /** Every applied event id, once per row. */
    public List<UUID> applied() {
        List<UUID> applied = new ArrayList<>();
        query("SELECT event_id FROM " + table + " ORDER BY seq", rows -> {
            while (rows.next()) {
                applied.add(rows.getObject(1, UUID.class));
            }
        });
        return applied;
    }

    public int count() {
        return applied().size();
    }

    private interface RowReader {
        void read(ResultSet rows) throws SQLException;
    }

    private void query(String sql, RowReader reader) {
        try (Connection connection = dataSource.getConnection();
                PreparedStatement statement = connection.prepareStatement(sql);
                ResultSet rows = statement.executeQuery()) {
            reader.read(rows);
        } catch (SQLException e) {
            throw new IllegalStateException(sql + ": " + e.getMessage(), e);
        }
    }
}
