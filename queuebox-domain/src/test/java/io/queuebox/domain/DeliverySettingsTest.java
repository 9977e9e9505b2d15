package io.queuebox.domain;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.ParkingPolicy;
import java.time.Duration;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

class DeliverySettingsTest {

    @Test
    void defaultsAreTheDocumentedOnes() {
        DeliverySettings settings = DeliverySettings.defaults();

        assertThat(settings.owner()).isEqualTo("queuebox");
        assertThat(settings.batchSize()).isEqualTo(100);
        assertThat(settings.workers()).isEqualTo(4);
        assertThat(settings.pipelineDepth()).isEqualTo(1);
        assertThat(settings.wakeInterval()).isEqualTo(Duration.ofMillis(500));
        assertThat(settings.leaseLength()).isEqualTo(Duration.ofSeconds(5));
        assertThat(settings.leaseRenewalInterval()).isEqualTo(Duration.ofSeconds(5).dividedBy(3));
        assertThat(settings.ordering()).isEqualTo(Ordering.PER_AGGREGATE);
        assertThat(settings.parkingPolicy()).isEqualTo(ParkingPolicy.HOLD_AGGREGATE);
        assertThat(settings.retryPolicy()).isEqualTo(RetryPolicy.defaults());
        assertThat(settings.shutdownDeadline()).isEqualTo(Duration.ofSeconds(30));
        assertThat(settings.purgeEnabled()).isTrue();
        assertThat(settings.purgeRetention()).isEqualTo(Duration.ofHours(24));
        assertThat(settings.purgeInterval()).isEqualTo(Duration.ofSeconds(60));
        assertThat(settings.purgeBatchSize()).isEqualTo(1000);
    }

    @Test
    void theClaimRequestCarriesTheSettings() {
        DeliverySettings settings = DeliverySettings.builder().owner("host-1").batchSize(7)
                .leaseLength(Duration.ofSeconds(9)).ordering(Ordering.NONE)
                .parkingPolicy(ParkingPolicy.CONTINUE_AGGREGATE).build();

        assertThat(settings.claimRequest()).isEqualTo(new ClaimRequest("host-1", 7, Duration.ofSeconds(9),
                Ordering.NONE, ParkingPolicy.CONTINUE_AGGREGATE));
    }

    @Test
    void toBuilderRoundTrips() {
        DeliverySettings settings = DeliverySettings.builder().owner("x").workers(4).pipelineDepth(3).purgeEnabled(false)
                .shutdownDeadline(Duration.ZERO).purgeRetention(Duration.ZERO).build();

        assertThat(settings.toBuilder().build()).isEqualTo(settings).hasSameHashCodeAs(settings);
        assertThat(settings).isNotEqualTo(DeliverySettings.defaults());
    }

    @Test
    void everyBadValueIsRejectedNamingItsProperty() {
        rejected("owner", b -> b.owner(" "));
        rejected("owner", b -> b.owner(null));
        rejected("batchSize", b -> b.batchSize(0));
        rejected("batchSize", b -> b.batchSize(100_001));
        rejected("workers", b -> b.workers(0));
        rejected("workers", b -> b.workers(257));
        rejected("pipelineDepth", b -> b.pipelineDepth(0));
        rejected("pipelineDepth", b -> b.pipelineDepth(5));
        rejected("wakeInterval", b -> b.wakeInterval(Duration.ZERO));
        rejected("wakeInterval", b -> b.wakeInterval(null));
        rejected("leaseLength", b -> b.leaseLength(Duration.ofMillis(-1)));
        rejected("leaseLength", b -> b.leaseLength(Duration.ofMillis(2)));
        rejected("ordering", b -> b.ordering(null));
        rejected("parkingPolicy", b -> b.parkingPolicy(null));
        rejected("retryPolicy", b -> b.retryPolicy(null));
        rejected("shutdownDeadline", b -> b.shutdownDeadline(Duration.ofSeconds(-1)));
        rejected("purgeRetention", b -> b.purgeRetention(Duration.ofSeconds(-1)));
        rejected("purgeInterval", b -> b.purgeInterval(Duration.ZERO));
        rejected("purgeBatchSize", b -> b.purgeBatchSize(0));
    }

    private static void rejected(String property, Consumer<DeliverySettings.Builder> change) {
        assertThatThrownBy(() -> change.accept(DeliverySettings.builder()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith(property + " ");
    }
}
