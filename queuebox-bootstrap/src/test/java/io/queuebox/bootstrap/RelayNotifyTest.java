package io.queuebox.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.zaxxer.hikari.HikariDataSource;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.embed.internal.Migrations;
import io.queuebox.embed.internal.Pools;
import io.queuebox.bootstrap.internal.Relay;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.postgres.PostgresOutbox;
import io.queuebox.postgres.PostgresOutboxSettings;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code outbox.wake.mode: notify} wired from configuration, in-process, against real PostgreSQL and RabbitMQ:
 * with the poll and reconciliation intervals at 30 s, only the notifications explain a delivery within a second.
 */
class RelayNotifyTest {

    private static final Duration PROMPTLY = Duration.ofSeconds(1);

    private static TestDatabase database;
    private static RabbitQueue rabbit;
    private final HttpClient http = HttpClient.newHttpClient();
    private final ObjectMapper json = new ObjectMapper();

    @BeforeAll
    static void services() throws Exception {
        database = TestDatabase.create("notify");
        rabbit = new RabbitQueue();
        try (HikariDataSource pool = Pools.operator(QueueBoxConfig.of(config()))) {
            Migrations.migrate(pool, QueueBoxConfig.of(config()));
        }
    }

    @AfterAll
    static void cleanUp() throws Exception {
        if (rabbit != null) {
            rabbit.close();
        }
        if (database != null) {
            database.close();
        }
    }

    private static Map<String, String> config(String... keyValues) {
        Map<String, String> values = RelayTest.configFor(database.url(), rabbit);
        values.put("outbox.wake.mode", "notify");
        values.put("outbox.pollIntervalMs", "30000");
        values.put("outbox.wake.reconciliationIntervalMs", "30000");
        for (int i = 0; i < keyValues.length; i += 2) {
            values.put(keyValues[i], keyValues[i + 1]);
        }
        return values;
    }

    private static OutboxEvent anEvent(String aggregate) {
        return OutboxEvent.of("order", aggregate, "OrderPlaced", "{}".getBytes(StandardCharsets.UTF_8));
    }

    /** Commits the events in one transaction of a connection of its own, as another application would. */
    private static void commit(PostgresOutboxSettings table, OutboxEvent... events) throws Exception {
        try (Connection connection = DriverManager.getConnection(database.url())) {
            connection.setAutoCommit(false);
            PostgresOutbox.jdbcWriter(table).enqueueAll(connection, List.of(events));
            connection.commit();
        }
    }

    private static void awaitDelivered(Duration within, OutboxEvent... events) {
        await().atMost(within).pollInterval(Duration.ofMillis(20)).untilAsserted(() -> assertThat(rabbit.drain())
                .containsAll(java.util.Arrays.stream(events).map(e -> e.eventId().toString()).toList()));
    }

    private JsonNode notifyHealth(Relay relay) throws Exception {
        HttpResponse<String> ready = http.send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + relay.httpPort() + "/health/ready")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(ready.statusCode()).as("the listener is advisory: " + ready.body()).isEqualTo(200);
        return json.readTree(ready.body()).path("components").path("outbox-notify");
    }

    private double metric(Relay relay, String series) throws Exception {
        String metrics = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + relay.httpPort() + "/metrics"))
                .build(), HttpResponse.BodyHandlers.ofString()).body();
        Matcher value = Pattern.compile("(?m)^" + Pattern.quote(series) + " ([0-9.E+-]+)$").matcher(metrics);
        return value.find() ? Double.parseDouble(value.group(1)) : 0.0;
    }

    @Test
    void insertsAreDeliveredWithinASecondThroughEveryTransactionShapeAndAfterTheListenerWasTerminated() throws Exception {
        PostgresOutboxSettings table = PostgresOutboxSettings.defaults();
        try (Relay relay = Relay.start(QueueBoxConfig.of(config()))) {
            await().atMost(Duration.ofSeconds(10)).until(() -> notifyHealth(relay).path("status").asText().equals("UP"));
            assertThat(notifyHealth(relay).path("detail").asText()).contains("LISTEN \"public.queuebox_outbox\"");

            // The claims at start and on the listener's first wake-up are behind us: only a notification is left.
            await().atMost(Duration.ofSeconds(5)).until(() -> metric(relay, "queuebox_claim_seconds_count") >= 2);

            // An insert committed by another connection.
            OutboxEvent first = anEvent("order-1");
            commit(table, first);
            awaitDelivered(PROMPTLY, first);
            assertThat(metric(relay, "queuebox_notify_notifications_total")).isEqualTo(1.0);

            // A rolled-back insert notifies nothing; the next insert is delivered as promptly.
            double notified = metric(relay, "queuebox_notify_notifications_total");
            OutboxEvent rolledBack = anEvent("order-2");
            try (Connection connection = DriverManager.getConnection(database.url())) {
                connection.setAutoCommit(false);
                PostgresOutbox.jdbcWriter(table).enqueue(connection, rolledBack);
                connection.rollback();
            }
            Thread.sleep(300);
            assertThat(metric(relay, "queuebox_notify_notifications_total")).isEqualTo(notified);
            OutboxEvent afterRollback = anEvent("order-2");
            commit(table, afterRollback);
            awaitDelivered(PROMPTLY, afterRollback);
            assertThat(rabbit.drain()).doesNotContain(rolledBack.eventId().toString());

            // Five rows of one transaction: a notification naming each row, every row delivered.
            double before = metric(relay, "queuebox_notify_notifications_total");
            OutboxEvent[] batch = {anEvent("order-3"), anEvent("order-4"), anEvent("order-3"), anEvent("order-5"),
                    anEvent("order-6")};
            commit(table, batch);
            awaitDelivered(PROMPTLY, batch);
            Thread.sleep(300);
            assertThat(metric(relay, "queuebox_notify_notifications_total")).isEqualTo(before + 5);

            // The listener's backend terminated: an insert committed while nobody listens is delivered on the
            // reconnect's wake-up, and later inserts are notified again.
            double restarts = metric(relay, "queuebox_wakeups_total{reason=\"notify_restart\"}");
            List<String> terminated = database.strings("SELECT pg_terminate_backend(pid)::text FROM pg_stat_activity"
                    + " WHERE application_name = '" + Relay.NOTIFY_APPLICATION_NAME + "' AND datname = '" + database.name() + "'");
            assertThat(terminated).containsExactly("true");
            OutboxEvent whileDown = anEvent("order-7");
            commit(table, whileDown);
            awaitDelivered(Duration.ofSeconds(5), whileDown);
            await().atMost(Duration.ofSeconds(5)).until(() -> notifyHealth(relay).path("status").asText().equals("UP"));
            assertThat(notifyHealth(relay).path("details").path("sessions").asLong()).isEqualTo(2);
            assertThat(metric(relay, "queuebox_wakeups_total{reason=\"notify_restart\"}")).isGreaterThan(restarts);
            OutboxEvent afterReconnect = anEvent("order-8");
            commit(table, afterReconnect);
            awaitDelivered(PROMPTLY, afterReconnect);
        }
        assertThat(database.strings("SELECT count(*)::text FROM pg_stat_activity WHERE application_name = '"
                + Relay.NOTIFY_APPLICATION_NAME + "' AND datname = '" + database.name() + "'"))
                .as("the listener's session is closed with the relay").containsExactly("0");
    }

    @Test
    void withTheListenerDownDeliveryPollsAtThePollInterval() throws Exception {
        // A table whose insert trigger is disabled, as the scripts leave it (and migrate with outbox.wake.mode poll):
        // the listener cannot listen and says why.
        PostgresOutboxSettings table = PostgresOutboxSettings.builder().table("no_notify_outbox").build();
        try (HikariDataSource pool = Pools.operator(QueueBoxConfig.of(config()))) {
            PostgresOutbox.createSchema(pool, table);
        }

        try (Relay relay = Relay.start(QueueBoxConfig.of(config("outbox.table", "no_notify_outbox",
                "outbox.pollIntervalMs", "300")))) {
            await().atMost(Duration.ofSeconds(10)).until(() ->
                    notifyHealth(relay).path("detail").asText().contains("the trigger no_notify_outbox_notify_rows of"
                            + " public.no_notify_outbox is disabled"));
            assertThat(notifyHealth(relay).path("status").asText()).isEqualTo("DOWN");

            OutboxEvent event = anEvent("order-9");
            commit(table, event);
            awaitDelivered(Duration.ofSeconds(3), event);
        }
    }
}
