package io.queuebox.sqlserver;

import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.ports.CaptureSettings;
import io.queuebox.ports.CaptureSourceInspector;
import io.queuebox.ports.CaptureSourceReport;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import javax.sql.DataSource;

/**
 * CDC on the database and on the outbox table, and SQL Server Agent (which runs CDC's capture job). SQL
 * Server has no replication slot: the report always says the slot exists and retains nothing measurable.
 */
final class SqlServerCaptureSourceInspector implements CaptureSourceInspector {

    private final DataSource dataSource;

    SqlServerCaptureSourceInspector(DataSource dataSource) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    @Override
    public CaptureSourceReport inspect(CaptureSettings settings) {
        CaptureFingerprint f = settings.fingerprint();
        List<String> problems = new ArrayList<>();
        try (Connection connection = dataSource.getConnection()) {
            String database = f.database();
            try (PreparedStatement statement = connection.prepareStatement(
                    SqlServerStatements.INSPECT_DATABASE_CDC.template());
                 ResultSet rs = statement.executeQuery()) {
                rs.next();
                database = rs.getString("name");
                if (!rs.getBoolean("is_cdc_enabled")) {
                    problems.add(Problems.databaseCdcDisabled(database));
                }
            }
            try (PreparedStatement statement = connection.prepareStatement(
                    SqlServerStatements.INSPECT_TABLE_CDC.template())) {
                statement.setString(1, f.schema());
                statement.setString(2, f.table());
                try (ResultSet rs = statement.executeQuery()) {
                    if (!rs.next()) {
                        problems.add(Problems.tableMissing(database, f));
                    } else if (!rs.getBoolean("is_tracked_by_cdc")) {
                        problems.add(Problems.tableCdcDisabled(database, f));
                    }
                }
            }
            Optional<String> agent = agentState(connection);
            if (agent.isEmpty()) {
                problems.add(Problems.AGENT_UNKNOWN);
            } else if (!agent.get().toLowerCase(Locale.ROOT).startsWith("running")) {
                problems.add(Problems.agentNotRunning(agent.get()));
            }
            return new CaptureSourceReport(true, OptionalLong.empty(), problems);
        } catch (SQLException e) {
            throw new IllegalStateException("could not inspect the capture source (SQL state " + e.getSQLState()
                    + "): " + e.getMessage(), e);
        }
    }

    /** The Agent's state as SQL Server words it, or empty when this account may not read it. */
    private static Optional<String> agentState(Connection connection) {
        try (PreparedStatement statement = connection.prepareStatement(
                SqlServerStatements.INSPECT_AGENT_SERVICE.template());
             ResultSet rs = statement.executeQuery()) {
            if (rs.next()) {
                return Optional.of(rs.getString("status_desc"));
            }
        } catch (SQLException e) {
            // Needs VIEW SERVER STATE; the ways below ask differently.
        }
        try (PreparedStatement statement = connection.prepareStatement(
                SqlServerStatements.INSPECT_AGENT_SESSIONS.template());
             ResultSet rs = statement.executeQuery()) {
            if (rs.next() && rs.getInt("can_see") == 1) {
                return Optional.of(rs.getInt("agent_sessions") > 0 ? "Running" : "not running (no SQLAgent session)");
            }
        } catch (SQLException e) {
            // Fall through to the extended procedure.
        }
        try (PreparedStatement statement = connection.prepareStatement(
                SqlServerStatements.INSPECT_AGENT_SERVICECONTROL.template());
             ResultSet rs = statement.executeQuery()) {
            if (rs.next()) {
                return Optional.ofNullable(rs.getString(1)).map(String::trim);
            }
        } catch (SQLException e) {
            // Neither way is open to this account.
        }
        return Optional.empty();
    }

    /** The sentences of the report, each saying how to fix what it names. */
    static final class Problems {

        static final String AGENT_UNKNOWN = "could not tell whether SQL Server Agent is running, and CDC's capture"
                + " job needs it: grant the relay's account VIEW SERVER STATE (GRANT VIEW SERVER STATE TO [user];)"
                + " so QueueBox can check, and make sure SQL Server Agent runs.";

        private Problems() {
        }

        static String databaseCdcDisabled(String database) {
            return "CDC is not enabled on database '" + database + "': run USE [" + database
                    + "]; EXEC sys.sp_cdc_enable_db; as a member of sysadmin.";
        }

        static String tableMissing(String database, CaptureFingerprint f) {
            return "the outbox table " + f.schema() + "." + f.table() + " does not exist in database '" + database
                    + "': create it with the scripts at classpath:" + SchemaScripts.LOCATION + ", then enable CDC"
                    + " on it with sys.sp_cdc_enable_table.";
        }

        static String tableCdcDisabled(String database, CaptureFingerprint f) {
            String instance = f.slot().isBlank() ? "" : ", @capture_instance = N'" + f.slot() + "'";
            return "CDC is not enabled on the outbox table " + f.schema() + "." + f.table() + ": run USE ["
                    + database + "]; EXEC sys.sp_cdc_enable_table @source_schema = N'" + f.schema()
                    + "', @source_name = N'" + f.table() + "', @role_name = NULL" + instance
                    + "; as a member of db_owner.";
        }

        static String agentNotRunning(String state) {
            return "SQL Server Agent is '" + state + "', but CDC's capture job runs in it: start SQL Server Agent"
                    + " (on Linux set MSSQL_AGENT_ENABLED=true or run mssql-conf set sqlagent.enabled true, then"
                    + " restart SQL Server).";
        }
    }
}
