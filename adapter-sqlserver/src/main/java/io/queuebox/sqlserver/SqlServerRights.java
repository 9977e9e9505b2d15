package io.queuebox.sqlserver;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * The rights the connecting user lacks, asked of SQL Server with {@code HAS_PERMS_BY_NAME}, each as a
 * sentence with the GRANT that gives it: without this check delivery would start and fail every claim.
 */
final class SqlServerRights {

    static final String DELIVERY_QUERY = "SELECT USER_NAME(), OBJECT_ID(?),"
            + " HAS_PERMS_BY_NAME(?, 'OBJECT', 'SELECT'),"
            + " HAS_PERMS_BY_NAME(?, 'OBJECT', 'UPDATE'),"
            + " HAS_PERMS_BY_NAME(?, 'OBJECT', 'DELETE')";
    static final String MIGRATION_QUERY = "SELECT USER_NAME(), SCHEMA_ID(?), OBJECT_ID(?),"
            + " HAS_PERMS_BY_NAME(DB_NAME(), 'DATABASE', 'CREATE SCHEMA'),"
            + " HAS_PERMS_BY_NAME(DB_NAME(), 'DATABASE', 'CREATE TABLE'),"
            + " HAS_PERMS_BY_NAME(?, 'SCHEMA', 'ALTER')";

    private SqlServerRights() {
    }

    static List<String> missingForDelivery(DataSource dataSource, SqlServerOutboxSettings settings) {
        String table = settings.qualifiedTable();
        return query(dataSource, DELIVERY_QUERY, List.of(table, table, table, table), rs -> {
            List<String> missing = new ArrayList<>();
            if (rs.getObject(2) == null) {
                return missing;
            }
            String user = rs.getString(1);
            String[] rights = {"SELECT", "UPDATE", "DELETE"};
            for (int i = 0; i < rights.length; i++) {
                if (rs.getInt(3 + i) != 1) {
                    missing.add(onTable(user, rights[i], table));
                }
            }
            return missing;
        });
    }

    static List<String> missingForMigration(DataSource dataSource, SqlServerOutboxSettings settings) {
        String schema = SqlServerOutboxSettings.quote(settings.schema());
        String table = settings.qualifiedTable();
        return query(dataSource, MIGRATION_QUERY, List.of(settings.schema(), table, schema), rs -> {
            List<String> missing = new ArrayList<>();
            String user = rs.getString(1);
            boolean schemaExists = rs.getObject(2) != null;
            boolean tableExists = rs.getObject(3) != null;
            if (!schemaExists && rs.getInt(4) != 1) {
                missing.add("user " + user + " may not create the schema " + schema + ": GRANT CREATE SCHEMA TO ["
                        + user + "]; (or create the schema yourself)");
            }
            if (!tableExists && rs.getInt(5) != 1) {
                missing.add("user " + user + " may not create tables: GRANT CREATE TABLE TO [" + user + "];");
            }
            if (schemaExists && !tableExists && rs.getInt(6) != 1) {
                missing.add("user " + user + " lacks ALTER on the schema " + schema + ": GRANT ALTER ON SCHEMA::"
                        + schema + " TO [" + user + "];");
            }
            return missing;
        });
    }

    static String onTable(String user, String right, String table) {
        return "user " + user + " lacks " + right + " on " + table + ": GRANT " + right + " ON OBJECT::" + table
                + " TO [" + user + "];";
    }

    @FunctionalInterface
    private interface Reading {
        List<String> read(ResultSet rs) throws SQLException;
    }

    private static List<String> query(DataSource dataSource, String sql, List<String> parameters, Reading reading) {
        try (Connection connection = dataSource.getConnection();
             PreparedStatement statement = connection.prepareStatement(sql)) {
            for (int i = 0; i < parameters.size(); i++) {
                statement.setString(i + 1, parameters.get(i));
            }
            try (ResultSet rs = statement.executeQuery()) {
                rs.next();
                return reading.read(rs);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("could not read the user's rights: " + e.getMessage(), e);
        }
    }
}
