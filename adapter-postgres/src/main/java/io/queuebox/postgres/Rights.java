package io.queuebox.postgres;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * What the connecting role may do, read from the catalog before any statement needs it, so a missing right is
 * reported with its GRANT instead of surfacing later as "permission denied" on every claim (or as a Flyway
 * failure). Catalog lookups by name need no rights on the schema or table looked up.
 */
final class Rights {

    private static final String LOOKUP = "SELECT current_user AS role, current_database() AS database,"
            + " has_database_privilege(current_database(), 'CREATE') AS create_schema,"
            + " n.oid IS NOT NULL AS schema_exists,"
            + " coalesce(has_schema_privilege(n.oid, 'USAGE'), false) AS schema_usage,"
            + " coalesce(has_schema_privilege(n.oid, 'CREATE'), false) AS schema_create,"
            + " t.oid IS NOT NULL AS table_exists,"
            + " coalesce(has_table_privilege(t.oid, 'SELECT'), false) AS table_select,"
            + " coalesce(has_table_privilege(t.oid, 'UPDATE'), false) AS table_update,"
            + " coalesce(has_table_privilege(t.oid, 'DELETE'), false) AS table_delete,"
            + " EXISTS (SELECT 1 FROM pg_class h WHERE h.relnamespace = n.oid AND h.relname = 'queuebox_schema_history')"
            + " AND EXISTS (SELECT 1 FROM pg_class c WHERE c.relnamespace = n.oid AND c.relname = 'queuebox_capture_state')"
            + " AS own_tables_exist"
            + " FROM (SELECT 1) one"
            + " LEFT JOIN pg_namespace n ON n.nspname = ?"
            + " LEFT JOIN pg_class t ON t.relnamespace = n.oid AND t.relname = ?";

    private Rights() {
    }

    /** What delivery lacks on an existing outbox table; nothing when the table does not exist (yet). */
    static List<String> missingForDelivery(DataSource dataSource, PostgresOutboxSettings settings) {
        List<String> missing = new ArrayList<>();
        lookup(dataSource, settings, (rs, role) -> {
            String schema = settings.schema();
            String table = settings.displayName();
            if (rs.getBoolean("schema_exists") && !rs.getBoolean("schema_usage")) {
                missing.add("role " + role + " lacks USAGE on schema " + schema + "; fix: GRANT USAGE ON SCHEMA "
                        + schema + " TO " + role);
                return;
            }
            if (!rs.getBoolean("table_exists")) {
                return;
            }
            List<String> lacking = new ArrayList<>();
            for (String right : List.of("SELECT", "UPDATE", "DELETE")) {
                if (!rs.getBoolean("table_" + right.toLowerCase(java.util.Locale.ROOT))) {
                    lacking.add(right);
                }
            }
            if (!lacking.isEmpty()) {
                missing.add("role " + role + " lacks " + String.join(", ", lacking) + " on " + table
                        + " (claims and outcomes update rows, the purge deletes them); fix: GRANT SELECT, UPDATE, DELETE ON "
                        + table + " TO " + role);
            }
        });
        return missing;
    }

    /** What creating or upgrading the schema lacks: creating the schema, or creating tables in it. */
    static List<String> missingForMigration(DataSource dataSource, PostgresOutboxSettings settings) {
        List<String> missing = new ArrayList<>();
        lookup(dataSource, settings, (rs, role) -> {
            String schema = settings.schema();
            if (!rs.getBoolean("schema_exists")) {
                if (!rs.getBoolean("create_schema")) {
                    String database = rs.getString("database");
                    missing.add("role " + role + " cannot create schema " + schema + " in database " + database
                            + "; fix: GRANT CREATE ON DATABASE " + database + " TO " + role
                            + ", or create it for the role: CREATE SCHEMA " + schema + " AUTHORIZATION " + role);
                }
                return;
            }
            boolean tablesToCreate = !rs.getBoolean("table_exists") || !rs.getBoolean("own_tables_exist");
            if (tablesToCreate && !(rs.getBoolean("schema_usage") && rs.getBoolean("schema_create"))) {
                missing.add("role " + role + " cannot create in schema " + schema + "; fix: GRANT USAGE, CREATE ON SCHEMA "
                        + schema + " TO " + role + " (or run migrate as the schema's owner)");
            }
        });
        return missing;
    }

    @FunctionalInterface
    private interface RowCheck {
        void check(ResultSet row, String role) throws SQLException;
    }

    private static void lookup(DataSource dataSource, PostgresOutboxSettings settings, RowCheck check) {
        try (Connection connection = dataSource.getConnection();
             PreparedStatement statement = connection.prepareStatement(LOOKUP)) {
            statement.setString(1, settings.schema());
            statement.setString(2, settings.table());
            try (ResultSet rs = statement.executeQuery()) {
                rs.next();
                check.check(rs, rs.getString("role"));
            }
        } catch (SQLException e) {
            throw new IllegalStateException("cannot read the role's rights from the catalog: " + e.getMessage(), e);
        }
    }
}
