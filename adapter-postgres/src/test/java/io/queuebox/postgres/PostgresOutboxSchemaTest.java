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
        assertThat(SchemaScripts.SCRIPTS).containsExactly("V1__queuebox_outbox.sql", "V2__queuebox_aggregate_order.sql",
                "V3__queuebox_lease_token_index.sql", "V4__queuebox_insert_notify.sql",
            "V5__queuebox_insert_notify_names_rows.sql");
        assertThat(scripts).hasSize(5).allSatisfy(script -> assertThat(script).doesNotContain("${"));
        assertThat(scripts.get(0))
                .contains("CREATE TABLE IF NOT EXISTS \"app\".\"events_out\"")
                .contains("\"app\".\"queuebox_capture_state\"");
        assertThat(scripts.get(1))
                .contains("'app', 'events_out_aggregate_lock'")
                .contains("BEFORE INSERT ON %2$I.%3$I FOR EACH ROW")
                .contains("pg_advisory_xact_lock(TG_RELID::integer,")
                .contains(EventWriter.lockKey("NEW"))
                .contains("NEW.seq := nextval(%3$L::regclass)");
        assertThat(scripts.get(2)).contains("\"events_out_lease_token_idx\"\n    ON \"app\".\"events_out\" (lease_token)");
        assertThat(scripts.get(3))
                .contains("channel text := 'app' || '.' || 'events_out';")
                .contains("'app', 'events_out_notify', channel)")
                .contains("AFTER INSERT ON %2$I.%3$I FOR EACH STATEMENT")
                .contains("ALTER TABLE %2$I.%3$I DISABLE TRIGGER %1$I");
    }

    @Test
    void theAggregateLockTriggerIsCreatedOnceAndFitsTheLongestTableName() throws SQLException {
        String table = "t".repeat(48);
        PostgresOutboxSettings settings = db.settings().table(table).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        PostgresOutbox.createSchema(db.dataSource, settings);

        assertThat(strings("SELECT tgname || ' ' || tgenabled::text || ' ' || pg_get_triggerdef(t.oid) FROM pg_trigger t"
                + " WHERE tgrelid = '" + db.schema + "." + table + "'::regclass AND NOT tgisinternal ORDER BY tgname"))
                .as("the order triggers enabled ALWAYS (A), so session_replication_role = replica does not skip them;"
                        + " the notify trigger disabled (D) until insert notifications are asked for")
                .satisfiesExactly(
                        lock -> assertThat(lock).startsWith(table + "_aggregate_lock A CREATE TRIGGER " + table
                                + "_aggregate_lock BEFORE INSERT ON ")
                                .contains("FOR EACH ROW EXECUTE FUNCTION " + db.schema + "." + table + "_aggregate_lock()"),
                        notify -> assertThat(notify).startsWith(table + "_notify D CREATE TRIGGER " + table
                                + "_notify AFTER INSERT ON ")
                                .contains("FOR EACH STATEMENT EXECUTE FUNCTION " + db.schema + "." + table + "_notify()"),
                        fixed -> assertThat(fixed).startsWith(table + "_order_fixed A CREATE TRIGGER " + table
                                + "_order_fixed BEFORE UPDATE OF aggregate_type, aggregate_id, seq ON "));
        assertThat(strings("SELECT prosrc FROM pg_proc WHERE proname = '" + table + "_aggregate_lock'"))
                .singleElement().asString()
                .as("the identity's sequence is written into the function")
                .contains("nextval('" + db.schema + "." + table + "_seq_seq'::regclass)");
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
        assertThat(strings("SELECT tgname FROM pg_trigger WHERE tgrelid = '" + db.schema + ".my_outbox'::regclass"
                + " AND NOT tgisinternal ORDER BY tgname")).containsExactly("my_outbox_aggregate_lock", "my_outbox_notify",
                "my_outbox_order_fixed");
    }

    @Test
    void theFifthScriptRecreatesTheNotifyTriggerAsEnabledAsItWas() throws SQLException {
        PostgresOutboxSettings settings = PostgresOutboxSettings.builder().schema(db.schema).table("notify_outbox").build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        String v5 = SchemaScripts.render("V5__queuebox_insert_notify_names_rows.sql", settings);
        String state = "SELECT tgenabled::text || ' ' || (pg_get_triggerdef(t.oid) LIKE '%REFERENCING NEW TABLE%')"
                + " FROM pg_trigger t WHERE tgrelid = '" + db.schema + ".notify_outbox'::regclass AND tgname = 'notify_outbox_notify'";
        assertThat(strings(state)).as("after createSchema").containsExactly("D true");

        for (String alter : List.of("ENABLE", "ENABLE ALWAYS", "ENABLE REPLICA", "DISABLE")) {
            db.execute("ALTER TABLE " + settings.qualifiedTable() + " " + alter + " TRIGGER notify_outbox_notify");
            List<String> before = strings(state);
            db.execute(v5);
            assertThat(strings(state)).as("after %s, then the fifth script again", alter).isEqualTo(before);
        }
    }

    @Test
    void theSecondScriptUpgradesATableThatAlreadyHasRowsAndSeqKeepsGrowing() throws SQLException {
        PostgresOutboxSettings settings = db.settings().table("upgraded").build();
        String table = settings.qualifiedTable();
        db.execute(SchemaScripts.render("V1__queuebox_outbox.sql", settings));
        db.execute("INSERT INTO " + table + " (event_id, aggregate_type, aggregate_id, event_type, payload)"
                + " SELECT gen_random_uuid(), 'order', 'order-' || g, 'OrderPlaced', '\\x7b7d' FROM generate_series(1, 3) g");

        db.execute(SchemaScripts.render("V2__queuebox_aggregate_order.sql", settings));
        db.execute("INSERT INTO " + table + " (event_id, aggregate_type, aggregate_id, event_type, payload)"
                + " VALUES (gen_random_uuid(), 'order', 'order-1', 'OrderShipped', '\\x7b7d')");

        assertThat(strings("SELECT event_type FROM " + table + " ORDER BY seq"))
                .containsExactly("OrderPlaced", "OrderPlaced", "OrderPlaced", "OrderShipped");
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
