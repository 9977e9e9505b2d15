package io.queuebox.bootstrap.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.bootstrap.TestDatabase;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.postgres.PostgresOutbox;
import io.queuebox.postgres.PostgresOutboxSettings;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/** migrate, outbox stats, parked and replay, in-process against a fresh PostgreSQL database. */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class OutboxCommandsTest {

    private static TestDatabase database;
    private static Map<String, String> env;
    private static List<OutboxEvent> events;

    @BeforeAll
    static void database() {
        database = TestDatabase.create("cli");
        env = Map.of("QUEUEBOX_DATABASE_URL", database.url(), "QUEUEBOX_BROKER_TYPE", "rabbitmq");
    }

    @AfterAll
    static void drop() {
        if (database != null) {
            database.close();
        }
    }

    @Test
    @Order(1)
    void migrateCreatesTheTableWithItsOwnHistoryAndIsRepeatable() throws Exception {
        CliRun first = CliRun.of(env, "migrate");
        CliRun second = CliRun.of(env, "migrate");

        assertThat(first.exitCode()).as(first.err()).isZero();
        int scripts = PostgresOutbox.renderSchemaScripts(PostgresOutboxSettings.defaults()).size();
        assertThat(first.out()).contains(scripts + " migration(s) applied").contains("public.queuebox_schema_history");
        assertThat(second.exitCode()).as(second.err()).isZero();
        assertThat(second.out()).contains("0 migration(s) applied");
        assertThat(database.count("public.queuebox_schema_history", "version = '1' AND success")).isEqualTo(1);
        assertThat(database.count("public.queuebox_schema_history", "version = '2' AND success")).isEqualTo(1);
        assertThat(database.count("pg_trigger", "tgname = 'queuebox_outbox_aggregate_lock'")).isEqualTo(1);
        assertThat(first.out()).contains("Insert notifications: off (outbox.wake.mode poll)");
        assertThat(database.count("pg_trigger", "tgname IN ('queuebox_outbox_notify', 'queuebox_outbox_notify_rows')"
                + " AND tgenabled = 'D'")).isEqualTo(2);
    }

    @Test
    @Order(2)
    void migrateSwitchesTheInsertNotificationsToTheWakeMode() throws Exception {
        Map<String, String> notify = new java.util.HashMap<>(env);
        notify.put("QUEUEBOX_OUTBOX_WAKE_MODE", "notify");

        CliRun on = CliRun.of(notify, "migrate");
        assertThat(on.exitCode()).as(on.err()).isZero();
        assertThat(on.out()).contains("0 migration(s) applied").contains("Insert notifications: on (outbox.wake.mode notify)");
        assertThat(database.count("pg_trigger", "tgname = 'queuebox_outbox_notify_rows' AND tgenabled = 'O'")).isEqualTo(1);
        assertThat(database.count("pg_trigger", "tgname = 'queuebox_outbox_notify' AND tgenabled = 'D'"))
                .as("version 4's trigger stays disabled beside version 5's").isEqualTo(1);
        assertThat(CliRun.of(notify, "migrate", "--dry-run").out())
                .contains("-- then migrate switches the outbox's insert notifications on (outbox.wake.mode notify)");

        CliRun off = CliRun.of(env, "migrate");
        assertThat(off.exitCode()).as(off.err()).isZero();
        assertThat(database.count("pg_trigger", "tgname IN ('queuebox_outbox_notify', 'queuebox_outbox_notify_rows')"
                + " AND tgenabled = 'D'")).isEqualTo(2);
    }

    @Test
    @Order(3)
    void statsCountPendingAndParkedRows() throws Exception {
        events = database.writeEvents(5);
        try (Connection connection = DriverManager.getConnection(database.url()); Statement statement = connection.createStatement()) {
            statement.executeUpdate("UPDATE public.queuebox_outbox SET status = 'parked', last_error = 'too large'"
                    + " WHERE aggregate_id = 'order-1'");
        }

        CliRun run = CliRun.of(env, "outbox", "stats");

        assertThat(run.exitCode()).as(run.err()).isZero();
        assertThat(run.out()).contains("pending: 3").contains("parked:  2").contains("leased:  0");
    }

    @Test
    @Order(4)
    void parkedListsEventsWithTheirLastError() {
        CliRun run = CliRun.of(env, "outbox", "parked");

        assertThat(run.exitCode()).as(run.err()).isZero();
        assertThat(run.out()).contains("2 parked event(s)").contains("order/order-1").contains("last error: too large");
    }

    @Test
    @Order(5)
    void replayDryRunChangesNothingThenReplayMakesThemPending() throws Exception {
        CliRun dryRun = CliRun.of(env, "outbox", "replay", "--aggregate", "order", "order-1", "--dry-run");
        assertThat(dryRun.exitCode()).as(dryRun.err()).isZero();
        assertThat(dryRun.out()).contains("dry run, nothing changed: 2 parked event(s)");
        assertThat(database.count("public.queuebox_outbox", "status = 'parked'")).isEqualTo(2);

        CliRun one = CliRun.of(env, "outbox", "replay", "--event-id", events.get(1).eventId().toString());
        assertThat(one.out()).contains("1 event(s) replayed");

        CliRun rest = CliRun.of(env, "outbox", "replay", "--all-parked");
        assertThat(rest.exitCode()).as(rest.err()).isZero();
        assertThat(rest.out()).contains("1 event(s) replayed");
        assertThat(database.count("public.queuebox_outbox", "status = 'parked'")).isZero();
    }

    @Test
    @Order(6)
    void replayNeedsExactlyOneSelection() {
        CliRun none = CliRun.of(env, "outbox", "replay");
        CliRun two = CliRun.of(env, "outbox", "replay", "--all-parked", "--event-id", events.get(0).eventId().toString());

        assertThat(none.exitCode()).isEqualTo(ExitCodes.BAD_CONFIGURATION);
        assertThat(two.exitCode()).isEqualTo(ExitCodes.BAD_CONFIGURATION);
        assertThat(two.err()).contains("mutually exclusive");
    }
}
