package io.queuebox.sqlserver;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The shipped Flyway script, rendered for a schema and table; no database needed. */
class SchemaScriptsTest {

    private static final SqlServerOutboxSettings SETTINGS =
            SqlServerOutboxSettings.builder().schema("Sales").table("order_outbox").build();

    @Test
    void theScriptIsAFlywayVersionedMigrationWithTheTwoPlaceholders() {
        assertThat(SchemaScripts.SCRIPTS).containsExactly("V1__queuebox_outbox.sql");
        assertThat(SqlServerOutbox.SCHEMA_LOCATION).isEqualTo("db/queuebox/sqlserver");
        String rendered = SqlServerOutbox.renderSchemaScripts(SETTINGS).get(0);
        assertThat(rendered).doesNotContain("${").contains("[Sales].[order_outbox]")
                .contains("[Sales].[queuebox_capture_state]");
    }

    @Test
    void theTableUsesSqlServerTypes() {
        String rendered = SqlServerOutbox.renderSchemaScripts(SETTINGS).get(0);
        assertThat(rendered)
                .containsPattern("seq\\s+bigint\\s+IDENTITY\\(1, 1\\) NOT NULL")
                .containsPattern("event_id\\s+uniqueidentifier\\s+NOT NULL")
                .containsPattern("payload\\s+varbinary\\(max\\)\\s+NOT NULL")
                .containsPattern("headers\\s+nvarchar\\(max\\)")
                .contains("CHECK (ISJSON(headers) = 1)")
                .containsPattern("created_at\\s+datetime2\\(7\\)\\s+NOT NULL .* DEFAULT SYSUTCDATETIME\\(\\)")
                .contains("UNIQUE CLUSTERED (seq)")
                .contains("PRIMARY KEY NONCLUSTERED (event_id)");
    }

    @Test
    void everyIndexButTheLeaseTokensIsFilteredAndEveryBatchIsIdempotent() {
        List<String> batches = SchemaScripts.batches(SqlServerOutbox.renderSchemaScripts(SETTINGS).get(0));
        assertThat(batches).hasSize(8);
        for (String batch : batches) {
            String code = batch.replaceAll("(?m)--.*$", "").strip();
            assertThat(code).as(code).startsWith("IF ");
            assertThat(code).doesNotContainPattern("(?im)^\\s*GO\\s*$");
            if (code.contains("CREATE INDEX") && !code.contains("_lease_token_idx")) {
                assertThat(code).as(code).containsPattern("WHERE status ");
            }
        }
        assertThat(batches).filteredOn(b -> b.contains("CREATE INDEX")).hasSize(5);
        assertThat(batches).anySatisfy(b -> assertThat(b).contains("[order_outbox_pending_seq_idx]")
                .contains("WHERE status = 'pending'"));
        assertThat(batches).anySatisfy(b -> assertThat(b).contains("[order_outbox_unsent_aggregate_idx]")
                .contains("WHERE status IN ('pending', 'parked')"));
        assertThat(batches.get(0)).contains("EXEC(N'CREATE SCHEMA [Sales]')");
    }
}
