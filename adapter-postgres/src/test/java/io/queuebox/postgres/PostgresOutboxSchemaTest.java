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
                        + " the notify triggers disabled (D) until insert notifications are asked for")
                .satisfiesExactly(
                        lock -> assertThat(lock).startsWith(table + "_aggregate_lock A CREATE TRIGGER " + table
                                + "_aggregate_lock BEFORE INSERT ON ")
                                .contains("FOR EACH ROW EXECUTE FUNCTION " + db.schema + "." + table + "_aggregate_lock()"),
                        notify -> assertThat(notify).startsWith(table + "_notify D CREATE TRIGGER " + table
                                + "_notify AFTER INSERT ON ")
                                .contains("FOR EACH STATEMENT EXECUTE FUNCTION " + db.schema + "." + table + "_notify()"),
                        rows -> assertThat(rows).startsWith(table + "_notify_rows D CREATE TRIGGER " + table
                                + "_notify_rows AFTER INSERT ON ")
                                .contains("FOR EACH ROW EXECUTE FUNCTION " + db.schema + "." + table + "_notify_rows()"),
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
                "my_outbox_notify_rows", "my_outbox_order_fixed");
    }

    @Test
    void theFifthScriptHandsTheNotifyTriggersStateToTheRowTriggerAndKeepsItOnASecondRun() throws SQLException {
        for (String state : List.of("D", "O", "A", "R")) {
            String table = "notify_" + state.toLowerCase();
            PostgresOutboxSettings settings = PostgresOutboxSettings.builder().schema(db.schema).table(table).build();
            for (String script : SchemaScripts.SCRIPTS.subList(0, 4)) {
                db.execute(SchemaScripts.render(script, settings));
            }
            String alter = switch (state) {
                case "O" -> "ENABLE";
                case "A" -> "ENABLE ALWAYS";
                case "R" -> "ENABLE REPLICA";
                default -> "DISABLE";
            };
            db.execute("ALTER TABLE " + settings.qualifiedTable() + " " + alter + " TRIGGER " + table + "_notify");
            String v5 = SchemaScripts.render("V5__queuebox_insert_notify_names_rows.sql", settings);
            String states = "SELECT string_agg(tgname || '=' || tgenabled::text, ' ' ORDER BY tgname) FROM pg_trigger"
                    + " WHERE tgrelid = '" + settings.qualifiedTable() + "'::regclass AND tgname LIKE '" + table + "_notify%'";

            db.execute(v5);
            String expected = table + "_notify=D " + table + "_notify_rows=" + state;
            assertThat(strings(states)).as("version 4's trigger %s, then the fifth script", alter).containsExactly(expected);
            db.execute("ALTER TABLE " + settings.qualifiedTable() + " DISABLE TRIGGER " + table + "_notify_rows");
            db.execute(v5);
            assertThat(strings(states)).as("the fifth script again, the row trigger disabled since")
                    .containsExactly(table + "_notify=D " + table + "_notify_rows=D");
        }
    }

    /**
     * Found by the review of 638bc8f, whose V5 dropped the trigger (ACCESS EXCLUSIVE) inside createSchema's one
     * transaction, after the earlier scripts' SHARE locks: with a held claim under way that then writes its outcome,
     * a lock cycle, and PostgreSQL aborted the claim. Here createSchema runs on a live table while a held claim holds
     * a row, both in the steady state and in the upgrade that hands version 4's enabled trigger over.
     */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
    void createSchemaOnALiveTableDeadlocksWithNoHeldClaim(boolean notifying) throws Exception {
        PostgresOutboxSettings settings = PostgresOutboxSettings.builder().schema(db.schema)
                .table(notifying ? "live_notify" : "live_poll").build();
        for (String script : SchemaScripts.SCRIPTS.subList(0, 4)) {
            db.execute(SchemaScripts.render(script, settings));
        }
        if (notifying) {
            db.execute("ALTER TABLE " + settings.qualifiedTable() + " ENABLE TRIGGER " + settings.table() + "_notify");
        }
        java.util.UUID id = java.util.UUID.randomUUID();
        db.execute("INSERT INTO " + settings.qualifiedTable() + " (event_id, aggregate_type, aggregate_id, event_type,"
                + " payload) VALUES ('" + id + "', 'order', 'o-1', 'X', '\\x7b7d')");
        try (Connection held = db.dataSource.getConnection(); Statement claim = held.createStatement()) {
            held.setAutoCommit(false);
            claim.execute("SET LOCAL statement_timeout = '20s'");
            try (ResultSet rows = claim.executeQuery("SELECT o.event_id FROM " + settings.qualifiedTable()
                    + " o WHERE o.event_id = '" + id + "' FOR UPDATE OF o SKIP LOCKED")) {
                assertThat(rows.next()).isTrue();
            }
            // Another instance of the application starts meanwhile.
            java.util.concurrent.CompletableFuture<Void> migration = java.util.concurrent.CompletableFuture.runAsync(
                    () -> PostgresOutbox.createSchema(db.dataSource, settings));
            Thread.sleep(300); // let it take its locks (or wait for one)
            claim.executeUpdate("UPDATE " + settings.qualifiedTable() + " SET status = 'sent', sent_at = clock_timestamp()"
                    + " WHERE event_id = '" + id + "'");
            held.commit();
            migration.get(30, java.util.concurrent.TimeUnit.SECONDS);
        }
        assertThat(strings("SELECT status FROM " + settings.qualifiedTable())).containsExactly("sent");
    }

    /**
     * Found by the review of 638bc8f, whose V5 replaced version 4's function with one that read a transition table:
     * a trigger renamed from version 4's kept calling it, without one, and every insert failed.
     */
    @Test
    void anInsertStillSucceedsAfterTheFifthScriptOnATableWhoseNotifyTriggerWasRenamed() throws SQLException {
        PostgresOutboxSettings settings = PostgresOutboxSettings.builder().schema(db.schema).table("renamed_outbox").build();
        for (String script : SchemaScripts.SCRIPTS.subList(0, 4)) {
            db.execute(SchemaScripts.render(script, settings));
        }
        db.execute("ALTER TABLE " + settings.qualifiedTable() + " ENABLE TRIGGER renamed_outbox_notify");
        db.execute("ALTER TRIGGER renamed_outbox_notify ON " + settings.qualifiedTable() + " RENAME TO outbox_wake");

        db.execute(SchemaScripts.render("V5__queuebox_insert_notify_names_rows.sql", settings));

        db.execute("INSERT INTO " + settings.qualifiedTable() + " (event_id, aggregate_type, aggregate_id, event_type,"
                + " payload) VALUES (gen_random_uuid(), 'order', 'o-1', 'X', '\\x7b7d')");
        assertThat(strings("SELECT count(*)::text FROM " + settings.qualifiedTable())).containsExactly("1");
    }

    /**
     * Found by the same review: a trigger created with a transition table has PostgreSQL copy every inserted row
     * even while it is disabled (poll mode, the default), spilling large statements to temp files.
     */
    @Test
    void theDisabledNotifyTriggerMakesALargeInsertWriteNoTempFiles() throws SQLException {
        PostgresOutboxSettings settings = PostgresOutboxSettings.builder().schema(db.schema).table("bulk_outbox").build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        List<String> plan = new ArrayList<>();
        try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            s.execute("SET LOCAL work_mem = '4MB'");
            try (ResultSet r = s.executeQuery("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) INSERT INTO "
                    + settings.qualifiedTable() + " (event_id, aggregate_type, aggregate_id, event_type, payload)"
                    + " SELECT gen_random_uuid(), 'order', 'o-' || (g % 50), 'X', convert_to(repeat('x', 200), 'UTF8')"
                    + " FROM generate_series(1, 50000) g")) {
                while (r.next()) {
                    plan.add(r.getString(1));
                }
            }
            c.rollback();
        }
        assertThat(String.join("\n", plan)).as("the plan of a 50,000-row insert, work_mem 4MB").doesNotContain("temp written=");
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
