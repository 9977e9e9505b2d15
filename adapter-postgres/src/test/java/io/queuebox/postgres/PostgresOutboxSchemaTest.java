package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class PostgresOutboxSchemaTest {

    private static TestDatabase db;

    @BeforeAll
    static void schema() {
        db = TestDatabase.withFreshSchema("schema");
    }

    @AfterAll
    static void drop() {
        db.close();
    }

    @Test
    void renderedScriptsNameTheConfiguredSchemaAndTableAndLeaveNoPlaceholder() {
        List<String> scripts = PostgresOutbox.renderSchemaScripts(
                PostgresOutboxSettings.builder().schema("app").table("events_out").build());
        assertThat(scripts).hasSameSizeAs(SchemaScripts.SCRIPTS);
        assertThat(scripts.get(0))
                .contains("CREATE TABLE IF NOT EXISTS \"app\".\"events_out\"")
                .contains("\"app\".\"queuebox_capture_state\"");
        assertThat(String.join("\n", scripts))
                .contains("\"events_out_lease_token_idx\"")
                .doesNotContain("${");
    }

    @Test
    void createSchemaMakesTheTableItsIndexesAndTheCaptureStateTableAndCanRunTwice() throws SQLException {
        PostgresOutboxSettings settings = db.settings().table("my_outbox").build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        PostgresOutbox.createSchema(db.dataSource, settings);

        assertThat(strings("SELECT column_name FROM information_schema.columns WHERE table_schema = '" + db.schema
                + "' AND table_name = 'my_outbox' ORDER BY ordinal_position")).containsExactly(
                "event_id", "seq", "aggregate_type", "aggregate_id", "event_type", "destination", "payload",
                "content_type", "headers", "created_at", "status", "attempts", "next_attempt_at", "lease_owner",
                "lease_token", "lease_until", "last_error", "sent_at");
        assertThat(strings("SELECT indexname FROM pg_indexes WHERE schemaname = '" + db.schema
                + "' AND tablename = 'my_outbox' ORDER BY indexname")).containsExactly(
                "my_outbox_lease_token_idx", "my_outbox_parked_seq_idx", "my_outbox_pending_ready_idx",
                "my_outbox_pending_seq_idx", "my_outbox_pkey", "my_outbox_sent_at_idx", "my_outbox_unsent_aggregate_idx");
        assertThat(strings("SELECT table_name FROM information_schema.tables WHERE table_schema = '" + db.schema
                + "' AND table_name = 'queuebox_capture_state'")).containsExactly("queuebox_capture_state");
    }

    private static List<String> strings(String sql) throws SQLException {
        List<String> values = new ArrayList<>();
        try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                values.add(rs.getString(1));
            }
        }
        return values;
    }
}
