package io.queuebox.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.embed.config.QueueBoxConfig;
import com.zaxxer.hikari.HikariDataSource;
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
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The relay wired from configuration, in-process, against real PostgreSQL and RabbitMQ. */
class RelayTest {

    private static TestDatabase database;
    private static RabbitQueue rabbit;

    @BeforeAll
    static void services() throws Exception {
        database = TestDatabase.create("relay");
        rabbit = new RabbitQueue();
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

    static Map<String, String> configFor(String url, RabbitQueue rabbit) {
        Map<String, String> values = new HashMap<>();
        values.put("database.url", url);
        values.put("broker.type", "rabbitmq");
        values.put("broker.rabbitmq.uri", rabbit.uri);
        values.put("broker.rabbitmq.exchange", rabbit.exchange);
        values.put("outbox.pollIntervalMs", "50");
        values.put("http.port", "0");
        values.put("http.host", "127.0.0.1");
        values.put("metrics.backlogSampleIntervalMs", "1000");
        values.put("shutdown.deadlineMs", "5000");
        return values;
    }

    @Test
    void deliversWrittenEventsReportsHealthAndMetricsAndLeavesNoLeaseBehind() throws Exception {
        QueueBoxConfig config = QueueBoxConfig.of(configFor(database.url(), rabbit));
        try (HikariDataSource pool = Pools.operator(config)) {
            Migrations.migrate(pool, config);
        }
        List<OutboxEvent> events = database.writeEvents(12);
        HttpClient http = HttpClient.newHttpClient();

        try (Relay relay = Relay.start(config)) {
            await().atMost(Duration.ofSeconds(20)).untilAsserted(() ->
                    assertThat(rabbit.drain()).containsAll(events.stream().map(e -> e.eventId().toString()).toList()));
            await().atMost(Duration.ofSeconds(10)).until(() -> database.count("public.queuebox_outbox", "status = 'sent'") == 12);

            HttpResponse<String> ready = http.send(HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + relay.httpPort() + "/health/ready")).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(ready.statusCode()).as(ready.body()).isEqualTo(200);
            assertThat(ready.body()).contains("\"database\"").contains("\"broker\"").contains("\"outbox-capture\"");

            await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
                String metrics = http.send(HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + relay.httpPort() + "/metrics")).build(),
                        HttpResponse.BodyHandlers.ofString()).body();
                assertThat(metrics).contains("queuebox_delivered_events_total 12.0")
                        .contains("queuebox_backlog_pending_rows 0.0")
                        .contains("hikaricp_connections_max{pool=\"queuebox-delivery\"}");
            });
        }
        assertThat(database.count("public.queuebox_outbox", "lease_token IS NOT NULL")).isZero();
    }
}
