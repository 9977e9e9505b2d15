package io.queuebox.bootstrap.console;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.OutboxEvent;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import org.junit.jupiter.api.Test;

class ConsoleSeriesTest {

    private static final Instant NOW = Instant.parse("2026-11-30T12:00:00Z");

    @Test
    void keepsTheLastHourOfPointsOldestFirstWithTheLatencyOfTheDeliveriesBetweenThem() {
        ConsoleSeries series = new ConsoleSeries(new SimpleMeterRegistry(), Clock.fixed(NOW, ZoneOffset.UTC),
                Duration.ofSeconds(60));
        series.onDelivered(List.of(aDeliveryWrittenAgo(Duration.ofMillis(40)), aDeliveryWrittenAgo(Duration.ofMillis(10)),
                aDeliveryWrittenAgo(Duration.ofMillis(90))));
        series.sample();
        series.sample();

        List<ConsoleSeries.Point> points = series.points();
        assertThat(points).hasSize(2);
        assertThat(points.get(0).latencyP50Ms()).isEqualTo(40);
        assertThat(points.get(0).latencyMaxMs()).isEqualTo(90);
        assertThat(points.get(0).publishedPerSecond()).isPositive();
        assertThat(points.get(1).latencyP50Ms()).as("nothing delivered since").isEqualTo(-1);

        for (int i = 0; i < 100; i++) {
            series.sample();
        }
        assertThat(series.points()).as("an hour of one-minute points").hasSize(60);
    }

    private static ClaimedDelivery aDeliveryWrittenAgo(Duration age) {
        OutboxEvent event = OutboxEvent.of("order", "order-1", "OrderPlaced", "{}".getBytes(StandardCharsets.UTF_8));
        return new ClaimedDelivery(1, event, 0, LeaseToken.random(), NOW.minus(age));
    }
}
