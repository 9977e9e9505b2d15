package io.queuebox.bootstrap.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.queuebox.embed.metrics.DeliveryMetrics;
import io.queuebox.ports.Health;
import io.queuebox.testkit.services.TestServices;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class HttpEndpointsTest {

    private final HttpClient client = HttpClient.newHttpClient();
    private final ObjectMapper json = new ObjectMapper();
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final AtomicReference<Health> broker = new AtomicReference<>(Health.up("connected"));
    private HikariDataSource dataSource;
    private HttpEndpoints endpoints;

    @BeforeEach
    void start() {
        HikariConfig hikari = new HikariConfig();
        hikari.setJdbcUrl(TestServices.postgresUrl());
        hikari.setMaximumPoolSize(2);
        dataSource = new HikariDataSource(hikari);
        new DeliveryMetrics(registry);
        endpoints = HttpEndpoints.start("127.0.0.1", 0, () -> Health.up("delivery loop running"), List.of(
                HealthComponent.required("database", new DataSourceHealth(dataSource)),
                HealthComponent.required("broker", broker::get),
                HealthComponent.advisory("outbox-capture", () -> Health.down("slot queuebox_slot is gone"))),
                registry::scrape);
    }

    @AfterEach
    void stop() {
        endpoints.close();
        dataSource.close();
    }

    private HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + endpoints.port() + path)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void readyIsUpWhenDatabaseAndBrokerAreUpEvenThoughCaptureIsDown() throws Exception {
        HttpResponse<String> response = get("/health/ready");

        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("Content-Type")).hasValue("application/json");
        JsonNode body = json.readTree(response.body());
        assertThat(body.path("status").asText()).isEqualTo("UP");
        assertThat(body.path("components").path("database").path("status").asText()).isEqualTo("UP");
        assertThat(body.path("components").path("database").path("details").has("active")).isTrue();
        assertThat(body.path("components").path("broker").path("advisory").asBoolean()).isFalse();
        assertThat(body.path("components").path("outbox-capture").path("status").asText()).isEqualTo("DOWN");
        assertThat(body.path("components").path("outbox-capture").path("advisory").asBoolean()).isTrue();
        assertThat(body.path("components").path("outbox-capture").path("detail").asText()).contains("slot");
    }

    @Test
    void readyIs503WhenTheBrokerIsDown() throws Exception {
        broker.set(Health.down("connection refused"));

        HttpResponse<String> response = get("/health/ready");

        assertThat(response.statusCode()).isEqualTo(503);
        JsonNode body = json.readTree(response.body());
        assertThat(body.path("status").asText()).isEqualTo("DOWN");
        assertThat(body.path("components").path("broker").path("detail").asText()).isEqualTo("connection refused");
    }

    @Test
    void readyIs503WhenTheDatabaseIsGone() throws Exception {
        dataSource.close();

        HttpResponse<String> response = get("/health/ready");

        assertThat(response.statusCode()).isEqualTo(503);
        assertThat(json.readTree(response.body()).path("components").path("database").path("status").asText())
                .isEqualTo("DOWN");
    }

    @Test
    void liveAnswersJson() throws Exception {
        HttpResponse<String> response = get("/health/live");

        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(json.readTree(response.body()).path("status").asText()).isEqualTo("UP");
    }

    @Test
    void metricsAnswerPrometheusText() throws Exception {
        HttpResponse<String> response = get("/metrics");

        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("Content-Type")).hasValueSatisfying(type -> assertThat(type).startsWith("text/plain"));
        assertThat(response.body()).contains("# TYPE queuebox_delivered_events_total counter");
    }

    @Test
    void onlyGetIsAllowed() throws Exception {
        HttpResponse<String> response = client.send(HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + endpoints.port() + "/health/ready"))
                .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());

        assertThat(response.statusCode()).isEqualTo(405);
    }
}
