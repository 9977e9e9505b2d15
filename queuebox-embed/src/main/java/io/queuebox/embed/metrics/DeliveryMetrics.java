package io.queuebox.embed.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.DeliveryListener;
import io.queuebox.ports.Health;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.ports.WakeReason;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * The delivery engine's events as Micrometer meters. Every meter is registered up front, so a scrape shows
 * zeros rather than missing series before the first delivery. Names (Prometheus form) are listed in
 * docs/operations.md.
 *
 * <p>Given the broker's health, it also shows each destination the publisher reports missing
 * ({@link Health#MISSING_DESTINATIONS}): a gauge per destination, 1 while missing and 0 once it exists, read
 * after every published batch (the only moment it can change).
 */
public final class DeliveryMetrics implements DeliveryListener {

    public static final String DELIVERED = "queuebox.delivered";
    public static final String FAILED = "queuebox.failed";
    public static final String RETRIED = "queuebox.retried";
    public static final String PARKED = "queuebox.parked";
    public static final String LEASE_LOST = "queuebox.lease.lost";
    public static final String ERRORS = "queuebox.errors";
    public static final String WAKEUPS = "queuebox.wakeups";
    public static final String CLAIM = "queuebox.claim";
    public static final String PUBLISH = "queuebox.publish";
    public static final String BATCH_SIZE = "queuebox.batch.size";
    public static final String EMPTY_CLAIMS = "queuebox.claims.empty";
    public static final String DESTINATION_MISSING = "queuebox.broker.destination.missing";

    private final MeterRegistry registry;
    private final Counter delivered;
    private final Counter failedRetriable;
    private final Counter failedPermanent;
    private final Counter notAttempted;
    private final Counter retried;
    private final Counter parked;
    private final Counter leaseLost;
    private final Timer claim;
    private final Timer publish;
    private final DistributionSummary batchSize;
    private final Counter emptyClaims;
    private final Map<WakeReason, Counter> wakeups = new EnumMap<>(WakeReason.class);
    private final Supplier<Health> brokerHealth;
    private final Map<String, AtomicInteger> missingDestinations = new ConcurrentHashMap<>();

    /** The meters, without the broker's missing destinations. */
    public DeliveryMetrics(MeterRegistry registry) {
        this(registry, () -> null);
    }

    /** The meters, and a gauge per destination that {@code brokerHealth} reports missing. */
    public DeliveryMetrics(MeterRegistry registry, Supplier<Health> brokerHealth) {
        this.registry = Objects.requireNonNull(registry, "registry");
        this.brokerHealth = Objects.requireNonNull(brokerHealth, "brokerHealth");
        delivered = Counter.builder(DELIVERED).description("Events the broker confirmed and that were marked sent")
                .baseUnit("events").register(registry);
        failedRetriable = failed("retriable");
        failedPermanent = failed("permanent");
        notAttempted = failed("not_attempted");
        retried = Counter.builder(RETRIED).description("Events sent back with backoff").baseUnit("events").register(registry);
        parked = Counter.builder(PARKED).description("Events parked for an operator").baseUnit("events").register(registry);
        leaseLost = Counter.builder(LEASE_LOST)
                .description("Rows whose lease expired and that another claimer took before the outcome was recorded")
                .baseUnit("rows").register(registry);
        claim = Timer.builder(CLAIM).description("Duration of one claim query").publishPercentileHistogram()
                .minimumExpectedValue(Duration.ofMillis(1)).maximumExpectedValue(Duration.ofSeconds(30)).register(registry);
        publish = Timer.builder(PUBLISH).description("Duration of publishing one batch until every outcome was known")
                .publishPercentileHistogram().minimumExpectedValue(Duration.ofMillis(1))
                .maximumExpectedValue(Duration.ofSeconds(60)).register(registry);
        batchSize = DistributionSummary.builder(BATCH_SIZE).description("Rows per non-empty claim")
                .baseUnit("rows").publishPercentileHistogram().minimumExpectedValue(1.0).maximumExpectedValue(10_000.0)
                .register(registry);
        emptyClaims = Counter.builder(EMPTY_CLAIMS)
                .description("Claims that found nothing to deliver: idle polls, and wake-ups another worker beat to the rows")
                .baseUnit("claims").register(registry);
        for (WakeReason reason : WakeReason.values()) {
            wakeups.put(reason, Counter.builder(WAKEUPS).description("Wake-ups of the delivery loop by reason")
                    .tag("reason", reason.name().toLowerCase(Locale.ROOT)).register(registry));
        }
    }

    private Counter failed(String reason) {
        return Counter.builder(FAILED).description("Publish failures by kind (retriable, permanent, or not_attempted: never sent, not charged)")
                .tag("reason", reason).baseUnit("events").register(registry);
    }

    @Override
    public void onWake(WakeReason reason) {
        wakeups.get(reason).increment();
    }

    @Override
    public void onClaimed(int rows, Duration elapsed) {
        claim.record(elapsed);
        if (rows > 0) {
            // Empty claims are counted apart: in the sizes they would bury the ones that matter.
            batchSize.record(rows);
        } else {
            emptyClaims.increment();
        }
    }

    @Override
    public void onPublished(List<PublishOutcome> outcomes, Duration elapsed) {
        publish.record(elapsed);
        for (PublishOutcome outcome : outcomes) {
            if (outcome instanceof PublishOutcome.RetriableFailure) {
                failedRetriable.increment();
            } else if (outcome instanceof PublishOutcome.PermanentFailure) {
                failedPermanent.increment();
            } else if (outcome instanceof PublishOutcome.NotAttempted) {
                notAttempted.increment();
            }
        }
        updateMissingDestinations();
    }

    private void updateMissingDestinations() {
        Health health = brokerHealth.get();
        Object reported = health == null ? null : health.details().get(Health.MISSING_DESTINATIONS);
        Set<String> missing = reported instanceof Map<?, ?> destinations
                ? destinations.keySet().stream().map(String::valueOf).collect(Collectors.toSet()) : Set.of();
        for (String destination : missing) {
            missingDestinations.computeIfAbsent(destination, name -> {
                AtomicInteger value = new AtomicInteger();
                Gauge.builder(DESTINATION_MISSING, value, AtomicInteger::get)
                        .description("1 while the broker reports this destination (topic, exchange) missing, then 0")
                        .tag("destination", name).register(registry);
                return value;
            }).set(1);
        }
        // A series that was 1 goes back to 0 rather than vanishing, so an alert sees it resolve.
        missingDestinations.forEach((destination, value) -> value.set(missing.contains(destination) ? 1 : 0));
    }

    @Override
    public void onDelivered(List<ClaimedDelivery> deliveries) {
        delivered.increment(deliveries.size());
    }

    @Override
    public void onRetryScheduled(ClaimedDelivery delivery, Duration delay, String reason) {
        retried.increment();
    }

    @Override
    public void onParked(ClaimedDelivery delivery, String reason) {
        parked.increment();
    }

    @Override
    public void onLeaseLost(LeaseToken lease, int expected, int updated) {
        leaseLost.increment(Math.max(0, expected - updated));
    }

    @Override
    public void onError(String step, Throwable error) {
        registry.counter(ERRORS, "step", step).increment();
    }
}
