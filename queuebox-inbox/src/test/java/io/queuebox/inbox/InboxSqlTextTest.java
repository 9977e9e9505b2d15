package io.queuebox.inbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/**
 * The SQL each database gets, checked as text: SQL Server cannot run here, so its statements are pinned down by
 * what they must contain. The name checks run before any SQL is built.
 */
class InboxSqlTextTest {

    private static final InboxSettings SQL_SERVER = InboxSettings.builder(InboxDatabase.SQL_SERVER)
            .schema("Sales").table("order_inbox").build();

    @Test
    void sqlServerRecordsUnderAKeyRangeLockSoARacingConsumerWaitsInsteadOfInsertingToo() {
        String sql = InboxDialect.SQL_SERVER.recordSql(InboxDialect.SQL_SERVER.qualified("Sales", "order_inbox"));

        assertThat(sql).isEqualTo("INSERT INTO [Sales].[order_inbox] (consumer, event_id) SELECT ?, ? WHERE NOT EXISTS"
                + " (SELECT 1 FROM [Sales].[order_inbox] WITH (UPDLOCK, HOLDLOCK) WHERE consumer = ? AND event_id = ?)");
    }

    @Test
    void sqlServerTakesADuplicateKeyErrorAsADuplicateAndNothingElse() {
        assertThat(InboxDialect.SQL_SERVER.isDuplicateKey(new java.sql.SQLException("pk", "23000", 2627))).isTrue();
        assertThat(InboxDialect.SQL_SERVER.isDuplicateKey(new java.sql.SQLException("unique", "23000", 2601))).isTrue();
        assertThat(InboxDialect.SQL_SERVER.isDuplicateKey(new java.sql.SQLException("deadlock", "40001", 1205))).isFalse();
        assertThat(InboxDialect.POSTGRESQL.isDuplicateKey(new java.sql.SQLException("dup", "23505", 0))).isFalse();
    }

    @Test
    void sqlServerPurgesTheOldestEntriesSkippingLockedOnesWithinTheBatch() {
        String sql = InboxDialect.SQL_SERVER.purgeSql(InboxDialect.SQL_SERVER.qualified("Sales", "order_inbox"));

        assertThat(sql).contains("SELECT TOP (?) consumer, event_id FROM [Sales].[order_inbox] WITH (UPDLOCK, ROWLOCK, READPAST)")
                .contains("ORDER BY processed_at")
                .contains("DATEADD(millisecond, -?, DATEADD(second, -?, SYSUTCDATETIME()))")
                .endsWith("DELETE FROM oldest");
    }

    @Test
    void postgresRecordsWithOnConflictDoNothingAndPurgesSkippingLockedRows() {
        InboxDialect postgres = InboxDialect.POSTGRESQL;
        String table = postgres.qualified("app", "queuebox_inbox");

        assertThat(postgres.recordSql(table)).isEqualTo(
                "INSERT INTO \"app\".\"queuebox_inbox\" (consumer, event_id) VALUES (?, ?) ON CONFLICT DO NOTHING");
        assertThat(postgres.purgeSql(table)).contains("ORDER BY processed_at LIMIT ? FOR UPDATE SKIP LOCKED");
    }

    @Test
    void theSqlServerScriptRendersIntoIdempotentBatchesWithEveryPlaceholderFilled() {
        String script = JdbcInbox.create(SQL_SERVER).renderSchemaScript();
        var batches = InboxDialect.batches(script);

        assertThat(script).doesNotContain("${");
        assertThat(batches).hasSize(3);
        assertThat(batches.get(0)).contains("IF SCHEMA_ID(N'Sales') IS NULL").contains("CREATE SCHEMA [Sales]");
        assertThat(batches.get(1)).contains("IF OBJECT_ID(N'[Sales].[order_inbox]', N'U') IS NULL")
                .contains("consumer     nvarchar(200)")
                .contains("CONSTRAINT [order_inbox_pk] PRIMARY KEY CLUSTERED (consumer, event_id)");
        assertThat(batches.get(2)).contains("IF NOT EXISTS").contains("CREATE INDEX [order_inbox_purge_idx]");
    }

    @Test
    void thePostgresScriptUsesItsOwnTablePlaceholderSoItNeverTakesTheOutboxTablesName() {
        String script = JdbcInbox.create(InboxSettings.builder(InboxDatabase.POSTGRESQL).schema("app").build())
                .renderSchemaScript();

        assertThat(script).doesNotContain("${")
                .contains("CREATE TABLE IF NOT EXISTS \"app\".\"queuebox_inbox\"")
                .contains("\"queuebox_inbox_purge_idx\"");
        assertThat(JdbcInbox.TABLE_PLACEHOLDER).isEqualTo("queuebox_inbox_table");
        assertThat(InboxDatabase.POSTGRESQL.schemaLocation()).isEqualTo("db/queuebox/inbox/postgres");
        assertThat(InboxDatabase.SQL_SERVER.schemaLocation()).isEqualTo("db/queuebox/inbox/sqlserver");
    }

    @Test
    void namesThatCouldCarrySqlAreRefusedNamingTheKeyAndTheValue() {
        assertThatThrownBy(() -> InboxSettings.builder(InboxDatabase.POSTGRESQL).table("inbox\"; DROP TABLE x; --"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("inbox.table")
                .hasMessageContaining("inbox\"; DROP TABLE x; --");
        assertThatThrownBy(() -> InboxSettings.builder(InboxDatabase.SQL_SERVER).schema("dbo].[x"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("inbox.schema");
        assertThatThrownBy(() -> InboxSettings.builder(InboxDatabase.POSTGRESQL).schema("Sales"))
                .as("PostgreSQL refuses upper case rather than folding it")
                .hasMessageContaining("lower-case letters");
        assertThatThrownBy(() -> InboxSettings.builder(InboxDatabase.POSTGRESQL).table("t".repeat(49)))
                .hasMessageContaining("1-48");
    }

    @Test
    void theDefaultsAreEachDatabasesDefaultSchemaAndTheQueueboxInboxTable() {
        assertThat(InboxSettings.defaults(InboxDatabase.POSTGRESQL).schema()).isEqualTo("public");
        assertThat(InboxSettings.defaults(InboxDatabase.SQL_SERVER).schema()).isEqualTo("dbo");
        assertThat(InboxSettings.defaults(InboxDatabase.SQL_SERVER).table()).isEqualTo("queuebox_inbox");
    }

    @Test
    void aConsumerNameIsCheckedWhereTheKeyIsMade() {
        assertThatThrownBy(() -> new io.queuebox.ports.InboxKey(" ", java.util.UUID.randomUUID()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("consumer");
        assertThatThrownBy(() -> new io.queuebox.ports.InboxKey("c".repeat(201), java.util.UUID.randomUUID()))
                .hasMessageContaining("1-200");
    }
}
