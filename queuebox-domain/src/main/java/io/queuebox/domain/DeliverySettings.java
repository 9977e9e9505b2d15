package io.queuebox.domain;

import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.ParkingPolicy;
import java.time.Duration;
import java.util.Objects;

/**
 * How the {@link DeliveryEngine} delivers. Immutable; built with {@link #builder()}, whose setters
 * validate at once and name the property in their {@link IllegalArgumentException}.
 *
 * <p>Every property and its default (the same defaults as the jar's and the starter's keys, which read these
 * constants; docs/reference/configuration.md lists them once):
 * <ul>
 *   <li>{@code owner}: the name recorded on claimed rows for operators. Default {@code "queuebox"}
 *       (the bootstrap sets {@code hostname-pid}).</li>
 *   <li>{@code batchSize}: the most rows one claim takes, 1 to 100 000. Default 100.</li>
 *   <li>{@code workers}: worker threads that claim and publish in parallel, 1 to 256. Default 4.</li>
 *   <li>{@code pipelineDepth}: how many batches one worker may have claimed and not yet recorded, 1 to
 *       {@value #MAX_PIPELINE_DEPTH}. Default {@value #DEFAULT_PIPELINE_DEPTH}, the serial loop (claim, publish, record,
 *       claim). From 2 the worker claims the next batch while its publish stage publishes the previous one and
 *       records its outcome, so the claim hides behind the broker confirms. Measured on a 2-core machine with
 *       the database and brokers local, that gained with one worker and lost with two (docs/performance.md),
 *       hence the serial default. Since one stage publishes one batch at a
 *       time, a depth above 2 cannot raise the steady rate (that is {@code 1 / max(claim, publish + record)} per
 *       worker); it only absorbs a claim slower than usual, at the cost of one more leased batch (rows and
 *       aggregates held back from other relays) per worker, and, with a store that holds row locks for the
 *       batch's life, one more database connection per worker. Hence the cap of {@value #MAX_PIPELINE_DEPTH}.</li>
 *   <li>{@code wakeInterval}: the longest an idle worker waits before it claims again: the poll interval
 *       in polling mode, the reconciliation interval when a wake source (capture, insert notifications) wakes
 *       the engine. Default 500 ms.</li>
 *   <li>{@code fallbackWakeInterval}: the longest an idle worker waits while the engine has wake sources
 *       and none of them reports UP (capture failed, restarting or faulted; the insert listener connecting or
 *       reconnecting): the poll interval, so that a failed source slows delivery to polling and never further.
 *       Default: {@code wakeInterval}.</li>
 *   <li>{@code leaseLength}: how long a claim holds its rows on the store's clock; renewed every third of
 *       it while a publish is in flight. At least 3 ms. Default 5 s: a relay that dies holds its rows (and their
 *       aggregates) back at most this long.</li>
 *   <li>{@code ordering}: {@link Ordering#PER_AGGREGATE} (default) or {@link Ordering#NONE}.</li>
 *   <li>{@code parkingPolicy}: {@link ParkingPolicy#HOLD_AGGREGATE} (default: a parked row holds back
 *       the later rows of its aggregate, so the ordering promise is kept) or
 *       {@link ParkingPolicy#CONTINUE_AGGREGATE} (opt-in).</li>
 *   <li>{@code retryPolicy}: {@link RetryPolicy#defaults()} (1 s doubling to 5 min, ±20 % jitter, parked
 *       after 20 attempts).</li>
 *   <li>{@code shutdownDeadline}: how long {@link DeliveryEngine#close()} lets in-flight publishes finish
 *       before it releases their leases; zero or more. Default 30 s.</li>
 *   <li>{@code purgeEnabled}: whether sent rows are deleted in the background. Default true.</li>
 *   <li>{@code purgeRetention}: how long sent rows are kept; zero or more. Default 24 h.</li>
 *   <li>{@code purgeInterval}: how often the purge runs. Default 60 s.</li>
 *   <li>{@code purgeBatchSize}: the most rows one purge statement deletes, 1 to 1 000 000. Default 1000.</li>
 * </ul>
 */
public final class DeliverySettings {

    public static final String DEFAULT_OWNER = "queuebox";
    public static final int DEFAULT_BATCH_SIZE = 100;
    public static final int DEFAULT_WORKERS = 4;
    public static final int DEFAULT_PIPELINE_DEPTH = 1;
    public static final int MAX_PIPELINE_DEPTH = 4;
    public static final Duration DEFAULT_WAKE_INTERVAL = Duration.ofMillis(500);
    public static final Duration DEFAULT_LEASE_LENGTH = Duration.ofSeconds(5);
    public static final Ordering DEFAULT_ORDERING = Ordering.PER_AGGREGATE;
    public static final ParkingPolicy DEFAULT_PARKING_POLICY = ParkingPolicy.HOLD_AGGREGATE;
    public static final Duration DEFAULT_SHUTDOWN_DEADLINE = Duration.ofSeconds(30);
    public static final boolean DEFAULT_PURGE_ENABLED = true;
    public static final Duration DEFAULT_PURGE_RETENTION = Duration.ofHours(24);
    public static final Duration DEFAULT_PURGE_INTERVAL = Duration.ofSeconds(60);
    public static final int DEFAULT_PURGE_BATCH_SIZE = 1000;

    private static final DeliverySettings DEFAULTS = builder().build();

    private final String owner;
    private final int batchSize;
    private final int workers;
    private final int pipelineDepth;
    private final Duration wakeInterval;
    private final Duration fallbackWakeInterval;
    private final Duration leaseLength;
    private final Ordering ordering;
    private final ParkingPolicy parkingPolicy;
    private final RetryPolicy retryPolicy;
    private final Duration shutdownDeadline;
    private final boolean purgeEnabled;
    private final Duration purgeRetention;
    private final Duration purgeInterval;
    private final int purgeBatchSize;

    private DeliverySettings(Builder b) {
        owner = b.owner;
        batchSize = b.batchSize;
        workers = b.workers;
        pipelineDepth = b.pipelineDepth;
        wakeInterval = b.wakeInterval;
        fallbackWakeInterval = b.fallbackWakeInterval == null ? b.wakeInterval : b.fallbackWakeInterval;
        leaseLength = b.leaseLength;
        ordering = b.ordering;
        parkingPolicy = b.parkingPolicy;
        retryPolicy = b.retryPolicy;
        shutdownDeadline = b.shutdownDeadline;
        purgeEnabled = b.purgeEnabled;
        purgeRetention = b.purgeRetention;
        purgeInterval = b.purgeInterval;
        purgeBatchSize = b.purgeBatchSize;
    }

    /** Every default (see the class description). */
    public static DeliverySettings defaults() {
        return DEFAULTS;
    }

    /** A builder starting from the defaults. */
    public static Builder builder() {
        return new Builder();
    }

    /** A builder starting from these settings. */
    public Builder toBuilder() {
        Builder builder = new Builder().owner(owner).batchSize(batchSize).workers(workers).pipelineDepth(pipelineDepth)
                .wakeInterval(wakeInterval)
                .leaseLength(leaseLength).ordering(ordering).parkingPolicy(parkingPolicy).retryPolicy(retryPolicy)
                .shutdownDeadline(shutdownDeadline).purgeEnabled(purgeEnabled).purgeRetention(purgeRetention)
                .purgeInterval(purgeInterval).purgeBatchSize(purgeBatchSize);
        // A fallback that only mirrored wakeInterval keeps mirroring it when the builder changes wakeInterval.
        return fallbackWakeInterval.equals(wakeInterval) ? builder : builder.fallbackWakeInterval(fallbackWakeInterval);
    }

    /** The claim every worker makes. */
    public ClaimRequest claimRequest() {
        return new ClaimRequest(owner, batchSize, leaseLength, ordering, parkingPolicy);
    }

    /** How often a lease is renewed while its batch is being published: a third of the lease length. */
    public Duration leaseRenewalInterval() {
        return leaseLength.dividedBy(3);
    }

    public String owner() {
        return owner;
    }

    public int batchSize() {
        return batchSize;
    }

    public int workers() {
        return workers;
    }

    public int pipelineDepth() {
        return pipelineDepth;
    }

    public Duration wakeInterval() {
        return wakeInterval;
    }

    public Duration fallbackWakeInterval() {
        return fallbackWakeInterval;
    }

    public Duration leaseLength() {
        return leaseLength;
    }

    public Ordering ordering() {
        return ordering;
    }

    public ParkingPolicy parkingPolicy() {
        return parkingPolicy;
    }

    public RetryPolicy retryPolicy() {
        return retryPolicy;
    }

    public Duration shutdownDeadline() {
        return shutdownDeadline;
    }

    public boolean purgeEnabled() {
        return purgeEnabled;
    }

    public Duration purgeRetention() {
        return purgeRetention;
    }

    public Duration purgeInterval() {
        return purgeInterval;
    }

    public int purgeBatchSize() {
        return purgeBatchSize;
    }

    @Override
    public String toString() {
        return "DeliverySettings[owner=" + owner + ", batchSize=" + batchSize + ", workers=" + workers
                + ", pipelineDepth=" + pipelineDepth + ", wakeInterval=" + wakeInterval + ", fallbackWakeInterval=" + fallbackWakeInterval + ", leaseLength=" + leaseLength + ", ordering=" + ordering
                + ", parkingPolicy=" + parkingPolicy + ", retryPolicy=" + retryPolicy + ", shutdownDeadline="
                + shutdownDeadline + ", purgeEnabled=" + purgeEnabled + ", purgeRetention=" + purgeRetention
                + ", purgeInterval=" + purgeInterval + ", purgeBatchSize=" + purgeBatchSize + "]";
    }

    /** Builds {@link DeliverySettings}; see the class description for every property and its default. */
    public static final class Builder {
        private String owner = DEFAULT_OWNER;
        private int batchSize = DEFAULT_BATCH_SIZE;
        private int workers = DEFAULT_WORKERS;
        private int pipelineDepth = DEFAULT_PIPELINE_DEPTH;
        private Duration wakeInterval = DEFAULT_WAKE_INTERVAL;
        private Duration fallbackWakeInterval;
        private Duration leaseLength = DEFAULT_LEASE_LENGTH;
        private Ordering ordering = DEFAULT_ORDERING;
        private ParkingPolicy parkingPolicy = DEFAULT_PARKING_POLICY;
        private RetryPolicy retryPolicy = RetryPolicy.defaults();
        private Duration shutdownDeadline = DEFAULT_SHUTDOWN_DEADLINE;
        private boolean purgeEnabled = DEFAULT_PURGE_ENABLED;
        private Duration purgeRetention = DEFAULT_PURGE_RETENTION;
        private Duration purgeInterval = DEFAULT_PURGE_INTERVAL;
        private int purgeBatchSize = DEFAULT_PURGE_BATCH_SIZE;

        private Builder() {
        }

        public Builder owner(String owner) {
            if (owner == null || owner.isBlank()) {
                throw new IllegalArgumentException("owner must be non-blank, got: " + owner);
            }
            this.owner = owner;
            return this;
        }

        public Builder batchSize(int batchSize) {
            this.batchSize = range(batchSize, 1, 100_000, "batchSize");
            return this;
        }

        public Builder workers(int workers) {
            this.workers = range(workers, 1, 256, "workers");
            return this;
        }

        public Builder pipelineDepth(int pipelineDepth) {
            this.pipelineDepth = range(pipelineDepth, 1, MAX_PIPELINE_DEPTH, "pipelineDepth");
            return this;
        }

        public Builder wakeInterval(Duration wakeInterval) {
            this.wakeInterval = positive(wakeInterval, "wakeInterval");
            return this;
        }

        public Builder fallbackWakeInterval(Duration fallbackWakeInterval) {
            this.fallbackWakeInterval = positive(fallbackWakeInterval, "fallbackWakeInterval");
            return this;
        }

        public Builder leaseLength(Duration leaseLength) {
            positive(leaseLength, "leaseLength");
            if (leaseLength.compareTo(Duration.ofMillis(3)) < 0) {
                throw new IllegalArgumentException("leaseLength must be at least 3 ms, got: " + leaseLength);
            }
            this.leaseLength = leaseLength;
            return this;
        }

        public Builder ordering(Ordering ordering) {
            this.ordering = present(ordering, "ordering");
            return this;
        }

        public Builder parkingPolicy(ParkingPolicy parkingPolicy) {
            this.parkingPolicy = present(parkingPolicy, "parkingPolicy");
            return this;
        }

        public Builder retryPolicy(RetryPolicy retryPolicy) {
            this.retryPolicy = present(retryPolicy, "retryPolicy");
            return this;
        }

        public Builder shutdownDeadline(Duration shutdownDeadline) {
            this.shutdownDeadline = notNegative(shutdownDeadline, "shutdownDeadline");
            return this;
        }

        public Builder purgeEnabled(boolean purgeEnabled) {
            this.purgeEnabled = purgeEnabled;
            return this;
        }

        public Builder purgeRetention(Duration purgeRetention) {
            this.purgeRetention = notNegative(purgeRetention, "purgeRetention");
            return this;
        }

        public Builder purgeInterval(Duration purgeInterval) {
            this.purgeInterval = positive(purgeInterval, "purgeInterval");
            return this;
        }

        public Builder purgeBatchSize(int purgeBatchSize) {
            this.purgeBatchSize = range(purgeBatchSize, 1, 1_000_000, "purgeBatchSize");
            return this;
        }

        public DeliverySettings build() {
            return new DeliverySettings(this);
        }

        private static int range(int value, int min, int max, String property) {
            if (value < min || value > max) {
                throw new IllegalArgumentException(property + " must be " + min + " to " + max + ", got: " + value);
            }
            return value;
        }

        private static <T> T present(T value, String property) {
            if (value == null) {
                throw new IllegalArgumentException(property + " must not be null");
            }
            return value;
        }

        private static Duration positive(Duration value, String property) {
            if (value == null || value.isNegative() || value.isZero()) {
                throw new IllegalArgumentException(property + " must be a positive duration, got: " + value);
            }
            return value;
        }

        private static Duration notNegative(Duration value, String property) {
            if (value == null || value.isNegative()) {
                throw new IllegalArgumentException(property + " must be zero or positive, got: " + value);
            }
            return value;
        }
    }

    // equals/hashCode compare every property so settings can be compared in configuration tests.
    @Override
    public boolean equals(Object other) {
        return other instanceof DeliverySettings that
                && owner.equals(that.owner) && batchSize == that.batchSize && workers == that.workers
                && pipelineDepth == that.pipelineDepth
                && wakeInterval.equals(that.wakeInterval) && fallbackWakeInterval.equals(that.fallbackWakeInterval)
                && leaseLength.equals(that.leaseLength)
                && ordering == that.ordering && parkingPolicy == that.parkingPolicy
                && retryPolicy.equals(that.retryPolicy) && shutdownDeadline.equals(that.shutdownDeadline)
                && purgeEnabled == that.purgeEnabled && purgeRetention.equals(that.purgeRetention)
                && purgeInterval.equals(that.purgeInterval) && purgeBatchSize == that.purgeBatchSize;
    }

    @Override
    public int hashCode() {
        return Objects.hash(owner, batchSize, workers, pipelineDepth, wakeInterval, fallbackWakeInterval, leaseLength, ordering, parkingPolicy,
                retryPolicy, shutdownDeadline, purgeEnabled, purgeRetention, purgeInterval, purgeBatchSize);
    }
}
