package io.queuebox.sqlserver;

import io.queuebox.jdbc.ConnectRefusal;
import io.queuebox.jdbc.DatabaseLocation;
import io.queuebox.jdbc.DatabaseProvider;
import io.queuebox.jdbc.OutboxDatabase;
import io.queuebox.jdbc.OutboxDatabaseParts;
import io.queuebox.jdbc.OutboxTable;
import io.queuebox.ports.CaptureMode;
import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;

/** SQL Server as a {@link DatabaseProvider}: {@code jdbc:sqlserver://} URLs, {@link SqlServerOutbox} underneath. */
public final class SqlServerDatabaseProvider implements DatabaseProvider {

    @Override
    public String name() {
        return "sqlserver";
    }

    @Override
    public String displayName() {
        return "SQL Server";
    }

    @Override
    public boolean accepts(String jdbcUrl) {
        return jdbcUrl != null && jdbcUrl.regionMatches(true, 0, SqlServerUrl.PREFIX, 0, SqlServerUrl.PREFIX.length());
    }

    @Override
    public String exampleUrl() {
        return "jdbc:sqlserver://db:1433;databaseName=app;encrypt=true";
    }

    @Override
    public CaptureMode captureMode() {
        return CaptureMode.SQLSERVER_CDC;
    }

    @Override
    public String defaultSchema() {
        return SqlServerOutboxSettings.DEFAULT_SCHEMA;
    }

    @Override
    public Optional<String> outboxTableProblem(OutboxTable table) {
        try {
            settings(table);
            return Optional.empty();
        } catch (IllegalArgumentException e) {
            return Optional.of(e.getMessage());
        }
    }

    @Override
    public String identifierRules() {
        return "a letter or _, then letters, digits or _; schema at most 128 characters, table at most 100 (its constraint and index names add a suffix)";
    }

    @Override
    public DatabaseLocation locate(String jdbcUrl) {
        return SqlServerUrl.parse(jdbcUrl).location();
    }

    @Override
    public String relocate(String jdbcUrl, DatabaseLocation location) {
        return SqlServerUrl.parse(jdbcUrl).relocate(location);
    }

    @Override
    public String withoutAccount(String jdbcUrl) {
        return SqlServerUrl.parse(jdbcUrl).withoutAccount();
    }

    @Override
    public Optional<String> urlProperty(String jdbcUrl, String name) {
        SqlServerUrl url = SqlServerUrl.parse(jdbcUrl);
        // mssql-jdbc reads userName as a synonym of user.
        return name.equals("user") ? url.property("user").or(() -> url.property("userName")) : url.property(name);
    }

    @Override
    public Map<String, String> connectionProperties(long socketTimeoutMillis, String applicationName) {
        Map<String, String> properties = new LinkedHashMap<>();
        properties.put("applicationName", applicationName);
        if (socketTimeoutMillis > 0) {
            // mssql-jdbc counts the socket timeout in milliseconds.
            properties.put("socketTimeout", Long.toString(socketTimeoutMillis));
            // The driver cancels a statement (an attention to the server, which rolls it back) a second before
            // the socket gives up, so a statement waiting on a lock does not run later on its own.
            long queryTimeoutSeconds = Math.max(1, (socketTimeoutMillis - 1000) / 1000);
            properties.put("queryTimeout", Long.toString(queryTimeoutSeconds));
        }
        return properties;
    }

    /**
     * SQL Server tells refusals by error number, not SQLSTATE: 18456 "Login failed" (unknown login and wrong
     * password alike, on purpose) and 4060 "Cannot open database".
     */
    @Override
    public Optional<ConnectRefusal> refusal(SQLException error) {
        return switch (error.getErrorCode()) {
            case 18456 -> Optional.of(ConnectRefusal.ACCOUNT);
            case 4060 -> Optional.of(ConnectRefusal.DATABASE);
            default -> Optional.empty();
        };
    }

    /** queryTimeout counts whole seconds and must end the statement on the server before the socket gives up. */
    @Override
    public Optional<String> socketTimeoutProblem(long socketTimeoutMillis) {
        return socketTimeoutMillis == 0 || socketTimeoutMillis >= 2000 ? Optional.empty()
                : Optional.of("at least 2000 ms (or 0) on SQL Server: the server-side cancel (queryTimeout) counts"
                        + " whole seconds and must come at least a second before the socket gives up");
    }

    @Override
    public String schemaLocation() {
        return SqlServerOutbox.SCHEMA_LOCATION;
    }

    @Override
    public List<String> renderSchemaScripts(OutboxTable table) {
        return SqlServerOutbox.renderSchemaScripts(settings(table));
    }

    @Override
    public OutboxDatabase open(DataSource dataSource, OutboxTable table) {
        Objects.requireNonNull(dataSource, "dataSource");
        SqlServerOutboxSettings settings = settings(table);
        return new OutboxDatabaseParts(SqlServerOutbox.store(dataSource, settings), SqlServerOutbox.jdbcWriter(settings),
                SqlServerOutbox.captureStateStore(dataSource, settings), SqlServerOutbox.captureLock(dataSource),
                SqlServerOutbox.captureSourceInspector(dataSource),
                () -> SqlServerRights.missingForDelivery(dataSource, settings),
                () -> SqlServerRights.missingForMigration(dataSource, settings),
                () -> SqlServerOutbox.createSchema(dataSource, settings));
    }

    static SqlServerOutboxSettings settings(OutboxTable table) {
        Objects.requireNonNull(table, "table");
        SqlServerOutboxSettings.Builder builder = SqlServerOutboxSettings.builder()
                .schema(table.schema())
                .table(table.table())
                .deleteOnSend(table.deleteOnSend())
                .holdRowLocks(table.holdRowLocks());
        table.maxPayloadBytes().ifPresent(builder::maxPayloadBytes);
        return builder.build();
    }
}
