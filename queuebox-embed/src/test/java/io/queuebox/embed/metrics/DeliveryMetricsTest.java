package io.queuebox.embed.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Health;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.ports.WakeReason;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class DeliveryMetricsTest {

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final DeliveryMetrics metrics = new DeliveryMetrics(registry);
    private final LeaseToken lease = LeaseToken.random();

    private ClaimedDelivery aDeliveryFor(String aggregateId) {
        OutboxEvent event = new OutboxEvent(UUID.randomUUID(), "order", aggregateId, "OrderPlaced", null,
                new byte[0], null, Map.of());
        return new ClaimedDelivery(1, event, 0, lease, Instant.EPOCH);
    }

    @Test
    void everyMeterIsVisibleAtZeroBeforeTheFirstDelivery() {
        String scrape = registry.scrape();

        assertThat(scrape).contains("queuebox_delivered_events_total 0.0")
                .contains("queuebox_failed_events_total{reason=\"retriable\"} 0.0")
                .contains("queuebox_failed_events_total{reason=\"permanent\"} 0.0")
                .contains("queuebox_parked_events_total 0.0")
                .contains("queuebox_claim_seconds_count 0")
                .contains("queuebox_wakeups_total{reason=\"capture\"} 0.0");
    }

    @Test
    void aDestinationTheBrokerReportsMissingIsAGaugeNamedAfterItThatGoesBackToZero() {
        AtomicReference<Health> broker = new AtomicReference<>(Health.up("fine"));
        DeliveryMetrics withBroker = new DeliveryMetrics(registry, broker::get);
        UUID event = UUID.randomUUID();

        broker.set(Health.down("missing topic(s) [orders.v2]").withDetails(Map.of(Health.MISSING_DESTINATIONS,
                Map.of("orders.v2", "UnknownTopicOrPartitionException"))));
        withBroker.onPublished(List.of(PublishOutcome.retriable(event, "topic 'orders.v2' does not exist")),
                Duration.ofMillis(5));

        assertThat(registry.scrape()).contains("queuebox_broker_destination_missing{destination=\"orders.v2\"} 1.0");

        broker.set(Health.up("last send acknowledged"));
        withBroker.onPublished(List.of(PublishOutcome.acked(event)), Duration.ofMillis(5));

        assertThat(registry.scrape()).contains("queuebox_broker_destination_missing{destination=\"orders.v2\"} 0.0");
    }

    @Test
    void countsOutcomesRetriesParkingsAndLostLeases() {
        ClaimedDelivery first = aDeliveryFor("1");
        ClaimedDelivery second = aDeliveryFor("2");
        ClaimedDelivery third = aDeliveryFor("3");

        metrics.onWake(WakeReason.INTERVAL);
        metrics.onClaimed(3, Duration.ofMillis(4));
        metrics.onClaimed(0, Duration.ofMillis(2));
        metrics.onPublished(List.of(PublishOutcome.acked(first.eventId()),
                PublishOutcome.retriable(second.eventId(), "timeout"),
                PublishOutcome.permanent(third.eventId(), "too large")), Duration.ofMillis(20));
        metrics.onDelivered(List.of(first));
        metrics.onRetryScheduled(second, Duration.ofSeconds(1), "timeout");
        metrics.onParked(third, "too large");
        metrics.onLeaseLost(lease, 5, 2);
        metrics.onError("claim", new IllegalStateException("boom"));

        String scrape = registry.scrape();
        assertThat(scrape)
                .contains("queuebox_delivered_events_total 1.0")
                .contains("queuebox_failed_events_total{reason=\"retriable\"} 1.0")
                .contains("queuebox_failed_events_total{reason=\"permanent\"} 1.0")
                .contains("queuebox_retried_events_total 1.0")
                .contains("queuebox_parked_events_total 1.0")
                .contains("queuebox_lease_lost_rows_total 3.0")
                .contains("queuebox_errors_total{step=\"claim\"} 1.0")
                .contains("queuebox_wakeups_total{reason=\"interval\"} 1.0")
                .contains("queuebox_claim_seconds_count 2")
                .contains("queuebox_claim_seconds_bucket{le=")
                .contains("queuebox_publish_seconds_count 1")
                .contains("queuebox_batch_size_rows_count 1")
                .contains("queuebox_claims_empty_claims_total 1.0")
                .contains("queuebox_batch_size_rows_sum 3.0");
    }
}
