package io.queuebox.embed.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** database.url chooses the database; its keys, modes, identifiers and defaults follow. */
class DatabaseChoiceTest {

    private static final String POSTGRES = "jdbc:postgresql://db:5432/app";
    private static final String SQLSERVER = "jdbc:sqlserver://mssql:1433;databaseName=shop";

    private static QueueBoxConfig config(String url, String... keyValues) {
        Map<String, String> values = new HashMap<>(Map.of("database.url", url, "broker.type", "kafka"));
        for (int i = 0; i < keyValues.length; i += 2) {
            values.put(keyValues[i], keyValues[i + 1]);
        }
        return QueueBoxConfig.of(values);
    }

    @Test
    void theDefaultsAreThoseOfTheDatabaseInUse() {
        QueueBoxConfig postgres = config(POSTGRES);
        QueueBoxConfig sqlServer = config(SQLSERVER);

        assertThat(postgres.string(Keys.OUTBOX_SCHEMA)).isEqualTo("public");
        assertThat(sqlServer.string(Keys.OUTBOX_SCHEMA)).isEqualTo("dbo");
        assertThat(postgres.optional(Keys.CAPTURE_SLOT)).hasValue("queuebox_slot");
        assertThat(sqlServer.optional(Keys.CAPTURE_SLOT)).isEmpty();
        assertThat(sqlServer.optional(Keys.CAPTURE_SQLSERVER_ENCRYPT)).hasValue("true");
        assertThat(postgres.optional(Keys.CAPTURE_SQLSERVER_ENCRYPT)).isEmpty();
        assertThat(sqlServer.describe()).anyMatch(line -> line.equals("outbox.schema = dbo  (default for SQL Server)"));
    }

    @Test
    void claimsHoldRowLocksByDefaultOnPostgresqlOnlyAndEitherCanBeChosen() {
        assertThat(Databases.outboxTable(config(POSTGRES)).holdRowLocks()).isTrue();
        assertThat(config(POSTGRES).describe()).anyMatch(line -> line.equals("outbox.holdRowLocks = true  (default for PostgreSQL)"));
        assertThat(Databases.outboxTable(config(SQLSERVER)).holdRowLocks()).as("never run against a real SQL Server").isFalse();
        assertThat(Databases.outboxTable(config(POSTGRES, "outbox.holdRowLocks", "false")).holdRowLocks()).isFalse();
        assertThat(Databases.outboxTable(config(SQLSERVER, "outbox.holdRowLocks", "true")).holdRowLocks()).isTrue();
    }

    @Test
    void aKeyOfTheOtherDatabaseIsRefusedNamingTheKeyAndBothDatabases() {
        assertThatThrownBy(() -> config(SQLSERVER, "outbox.capture.slot", "orders_slot"))
                .hasMessageContaining("outbox.capture.slot = 'orders_slot': applies to PostgreSQL only, but database.url is SQL Server");
        assertThatThrownBy(() -> config(POSTGRES, "outbox.capture.sqlserver.trustServerCertificate", "true"))
                .hasMessageContaining("outbox.capture.sqlserver.trustServerCertificate = 'true': applies to SQL Server only,"
                        + " but database.url is PostgreSQL");
    }

    @Test
    void aCaptureModeOfTheOtherDatabaseIsRefusedWithTheAllowedModes() {
        assertThatThrownBy(() -> config(SQLSERVER, "outbox.capture.mode", "postgres-logical"))
                .hasMessageContaining("outbox.capture.mode = 'postgres-logical'")
                .hasMessageContaining("allowed: polling, sqlserver-cdc");
        assertThatThrownBy(() -> config(POSTGRES, "outbox.capture.mode", "sqlserver-cdc"))
                .hasMessageContaining("allowed: polling, postgres-logical");
        assertThat(config(SQLSERVER, "outbox.capture.mode", "sqlserver-cdc", "database.username", "relay")
                .string(Keys.CAPTURE_MODE)).isEqualTo("sqlserver-cdc");
    }

    @Test
    void notifyWakeUpsAreRefusedOnADatabaseThatCannotNotifyNamingTheKeyAndTheDatabase() {
        assertThatThrownBy(() -> config(SQLSERVER, "outbox.wake.mode", "notify"))
                .hasMessageContaining("outbox.wake.mode = 'notify': notify needs a database that notifies inserts"
                        + " (PostgreSQL), and database.url is SQL Server; allowed: poll");
        assertThat(config(SQLSERVER, "outbox.wake.mode", "poll").string(Keys.WAKE_MODE)).isEqualTo("poll");
        assertThat(config(POSTGRES, "outbox.wake.mode", "notify").string(Keys.WAKE_MODE)).isEqualTo("notify");
        assertThat(config(POSTGRES).string(Keys.WAKE_MODE)).as("the default").isEqualTo("poll");
    }

    @Test
    void notifyWakeUpsAndActiveCaptureAreRefusedTogether() {
        assertThatThrownBy(() -> config(POSTGRES, "outbox.wake.mode", "notify", "outbox.capture.enabled", "true",
                "outbox.capture.mode", "postgres-logical", "database.username", "relay"))
                .hasMessageContaining("outbox.wake.mode = 'notify': capture (outbox.capture.enabled with postgres-logical)"
                        + " already wakes delivery on insert; choose one");
        assertThat(config(POSTGRES, "outbox.wake.mode", "notify", "outbox.capture.enabled", "true")
                .string(Keys.WAKE_MODE)).as("capture enabled in polling mode wakes nothing").isEqualTo("notify");
    }

    @Test
    void identifiersAreCheckedByTheRulesOfTheDatabase() {
        assertThat(config(SQLSERVER, "outbox.schema", "Sales", "outbox.table", "OrderOutbox").string(Keys.OUTBOX_TABLE))
                .isEqualTo("OrderOutbox");
        assertThatThrownBy(() -> config(POSTGRES, "outbox.schema", "Sales"))
                .hasMessageContaining("outbox.schema = 'Sales'").hasMessageContaining("(PostgreSQL)");
        assertThatThrownBy(() -> config(POSTGRES, "outbox.table", "t".repeat(49)))
                .hasMessageContaining("outbox.table = '" + "t".repeat(49) + "'");
        assertThat(config(SQLSERVER, "outbox.table", "t".repeat(100)).string(Keys.OUTBOX_TABLE)).hasSize(100);
        assertThatThrownBy(() -> config(SQLSERVER, "outbox.table", "orders; DROP TABLE x"))
                .hasMessageContaining("outbox.table = 'orders; DROP TABLE x'").hasMessageContaining("(SQL Server)");
    }

    @Test
    void aUrlNoDatabaseOfTheBuildAcceptsIsRefusedListingTheOnesItHas() {
        assertThatThrownBy(() -> config("jdbc:mysql://db:3306/app"))
                .hasMessageContaining("database.url = 'jdbc:mysql://db:3306/app': no database of this build accepts this URL")
                .hasMessageContaining("PostgreSQL (jdbc:postgresql://")
                .hasMessageContaining("SQL Server (jdbc:sqlserver://");
        assertThatThrownBy(() -> config("jdbc:sqlserver://mssql:14x3;databaseName=shop"))
                .hasMessageContaining("database.url").hasMessageContaining("the port '14x3'");
    }

    @Test
    void activeCaptureOnSqlServerNeedsAnAccountToo() {
        assertThatThrownBy(() -> config(SQLSERVER, "outbox.capture.enabled", "true", "outbox.capture.mode", "sqlserver-cdc"))
                .hasMessageContaining("outbox.capture.connection.username: capture needs an account");
        assertThat(config(SQLSERVER + ";user=relay", "outbox.capture.enabled", "true", "outbox.capture.mode",
                "sqlserver-cdc").bool(Keys.CAPTURE_ENABLED)).isTrue();
    }

    @Test
    void aBracedSqlServerPasswordIsAcceptedAndMaskedWhole() {
        QueueBoxConfig config = config("jdbc:sqlserver://mssql:1433;databaseName=shop;user=relay;password={Sup3r;S3cret}");

        assertThat(config.describe()).anyMatch(line -> line.startsWith("database.url = "))
                .noneMatch(line -> line.contains("S3cret") || line.contains("Sup3r"));
        assertThat(Masking.maskUrl("jdbc:sqlserver://m;password={a;b}}c};encrypt=true"))
                .isEqualTo("jdbc:sqlserver://m;password=******;encrypt=true");
    }

    @Test
    void onSqlServerTheSocketTimeoutLeavesRoomForTheServerSideCancel() {
        assertThatThrownBy(() -> config(SQLSERVER, "database.socketTimeoutMs", "1500"))
                .hasMessageContaining("database.socketTimeoutMs = '1500': at least 2000 ms (or 0) on SQL Server");
        assertThat(config(POSTGRES, "database.socketTimeoutMs", "1500").longValue(Keys.DATABASE_SOCKET_TIMEOUT_MS))
                .isEqualTo(1500);
    }
}
