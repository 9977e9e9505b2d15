package io.queuebox.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.embed.internal.Migrations;
import io.queuebox.embed.internal.Pools;
import io.queuebox.bootstrap.internal.Relay;
import io.queuebox.ports.OutboxEvent;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Capture wired from configuration: PostgreSQL logical replication wakes delivery long before the
 * reconciliation interval would, and the capture component reports itself as advisory.
 */
class RelayCaptureTest {

    private static final String SLOT = "qb_slot_" + UUID.randomUUID().toString().substring(0, 8);

    private static TestDatabase database;
    private static RabbitQueue rabbit;

    @TempDir
    Path stateDirectory;

    @BeforeAll
    static void services() throws Exception {
        database = TestDatabase.create("capture");
        rabbit = new RabbitQueue();
    }

    @AfterAll
    static void cleanUp() throws Exception {
        if (rabbit != null) {
            rabbit.close();
        }
        if (database != null) {
            try (Connection connection = DriverManager.getConnection(database.url());
                 Statement statement = connection.createStatement()) {
                // A slot nobody reads holds WAL forever, and it blocks dropping the database.
                statement.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '" + SLOT + "'");
            }
            database.close();
        }
    }

    @Test
    void captureWakesDeliveryWithinSecondsAndIsReportedAsAdvisory() throws Exception {
        Map<String, String> values = new java.util.HashMap<>(RelayTest.configFor(database.url(), rabbit));
        values.put("outbox.capture.enabled", "true");
        values.put("outbox.capture.mode", "postgres-logical");
        values.put("outbox.capture.slot", SLOT);
        values.put("outbox.capture.stateDirectory", stateDirectory.toString());
        // Without capture, nothing would look at the table for a minute.
        values.put("outbox.capture.reconciliationIntervalMs", "60000");
        values.put("outbox.pollIntervalMs", "60000");
        QueueBoxConfig config = QueueBoxConfig.of(values);
        try (HikariDataSource pool = Pools.operator(config)) {
            Migrations.migrate(pool, config);
        }
        try (Connection connection = DriverManager.getConnection(database.url()); Statement statement = connection.createStatement()) {
            statement.execute("CREATE PUBLICATION queuebox_publication FOR TABLE public.queuebox_outbox"
                    + " WITH (publish = 'insert')");
        }
        HttpClient http = HttpClient.newHttpClient();

        try (Relay relay = Relay.start(config)) {
            URI ready = URI.create("http://127.0.0.1:" + relay.httpPort() + "/health/ready");
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(
                    http.send(HttpRequest.newBuilder(ready).build(), HttpResponse.BodyHandlers.ofString()).body())
                    .contains("\"outbox-capture\":{\"status\":\"UP\",\"advisory\":true"));

            // Rows committed before the connector streams are found by the wake-up at stream start, not by
            // capture itself: write probes until capture has seen one, then measure with fresh rows.
            URI metricsUri = URI.create("http://127.0.0.1:" + relay.httpPort() + "/metrics");
            await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(500)).until(() -> {
                database.writeEvents(1);
                return http.send(HttpRequest.newBuilder(metricsUri).build(), HttpResponse.BodyHandlers.ofString())
                        .body().matches("(?s).*queuebox_capture_wake_events_total [1-9].*");
            });
            List<OutboxEvent> events = database.writeEvents(3);

            await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(rabbit.drain())
                    .containsAll(events.stream().map(e -> e.eventId().toString()).toList()));
            String metrics = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + relay.httpPort() + "/metrics"))
                    .build(), HttpResponse.BodyHandlers.ofString()).body();
            assertThat(metrics).containsPattern("queuebox_capture_wake_events_total [1-9]")
                    .contains("hikaricp_connections_max{pool=\"queuebox-capture\"} 3.0")
                    .contains("queuebox_capture_state{state=\"RUNNING\"} 1.0")
                    .contains("queuebox_capture_state{state=\"FAULT\"} 0.0")
                    .containsPattern("queuebox_capture_last_event_age_seconds [0-9]")
                    .containsPattern("queuebox_capture_retained_wal_bytes\\{slot=\"[a-z0-9_]+\"} [0-9]");
        }
        assertThat(stateDirectory.resolve("identity")).exists();
        assertThat(database.count("public.queuebox_capture_state", "true")).isEqualTo(1);
    }
}
