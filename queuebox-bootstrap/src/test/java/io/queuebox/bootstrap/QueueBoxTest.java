package io.queuebox.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.queuebox.domain.DeliverySettings;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.postgres.PostgresOutbox;
import io.queuebox.postgres.PostgresOutboxSettings;
import io.queuebox.testkit.publisher.RecordingPublisher;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The embedding API on real PostgreSQL, with the testkit's recording broker. */
class QueueBoxTest {

    private static TestDatabase database;
    private static HikariDataSource dataSource;

    @BeforeAll
    static void database() {
        database = TestDatabase.create("embed");
        HikariConfig hikari = new HikariConfig();
        hikari.setJdbcUrl(database.url());
        hikari.setMaximumPoolSize(6);
        dataSource = new HikariDataSource(hikari);
        PostgresOutbox.createSchema(dataSource, PostgresOutboxSettings.defaults());
    }

    @AfterAll
    static void drop() {
        if (dataSource != null) {
            dataSource.close();
        }
        if (database != null) {
            database.close();
        }
    }

    @Test
    void deliversEventsRecordsMetricsAndStopsWithoutLeavingLeases() throws Exception {
        RecordingPublisher broker = RecordingPublisher.acking();
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        List<OutboxEvent> events = database.writeEvents(9);

        QueueBox relay = QueueBox.builder()
                .dataSource(dataSource)
                .publisher(broker)
                .settings(DeliverySettings.builder().workers(2).wakeInterval(Duration.ofMillis(50)).build())
                .meterRegistry(registry)
                .backlogSampleInterval(Duration.ofMillis(200))
                .start();
        try {
            await().atMost(Duration.ofSeconds(15)).untilAsserted(() ->
                    assertThat(broker.deliveredIds()).containsExactlyInAnyOrderElementsOf(
                            events.stream().map(OutboxEvent::eventId).toList()));
            await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(registry.scrape())
                    .contains("queuebox_delivered_events_total 9.0")
                    .contains("queuebox_backlog_pending_rows 0.0"));
            assertThat(relay.liveness().isUp()).isTrue();
        } finally {
            assertThat(relay.stop(Duration.ofSeconds(5))).isTrue();
        }
        assertThat(relay.isRunning()).isFalse();
        assertThat(relay.liveness().isUp()).isFalse();
        assertThat(broker.isClosed()).as("the caller owns the publisher").isFalse();
        assertThat(database.count("public.queuebox_outbox", "lease_token IS NOT NULL")).isZero();
        assertThat(database.count("public.queuebox_outbox", "status = 'sent'")).isEqualTo(9);
    }

    @Test
    void builderNamesWhatIsMissing() {
        assertThatThrownBy(() -> QueueBox.builder().publisher(RecordingPublisher.acking()).start())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("dataSource");
        assertThatThrownBy(() -> QueueBox.builder().dataSource(null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("dataSource");
    }
}
