package io.queuebox.domain;

import java.time.Duration;
import java.util.Objects;
import java.util.random.RandomGenerator;

/**
 * How a failed delivery is retried: exponential backoff with jitter and a cap, then parking after a
 * maximum number of attempts. A permanent failure parks at once.
 *
 * <p>The delay before retry {@code n} (the row has failed {@code n} times) is
 * {@code initialDelay * multiplier^(n-1)}, capped at {@code maxDelay}, then spread uniformly by
 * {@code ±jitter} and capped at {@code maxDelay} again: no delay is ever longer than {@code maxDelay}.
 * When the row has failed {@code maxAttempts} times it is parked instead.
 *
 * <p>Defaults ({@link #defaults()}):
 * <ul>
 *   <li>{@code initialDelay}: 1 s</li>
 *   <li>{@code multiplier}: 2.0</li>
 *   <li>{@code maxDelay}: 5 min</li>
 *   <li>{@code jitter}: 0.2 (each delay is spread by ±20 %)</li>
 *   <li>{@code maxAttempts}: 20 (1, 2, 4 ... 256 s, then 5 min each: about an hour of retries before the
 *       row is parked)</li>
 * </ul>
 *
 * <p>Immutable and thread-safe. Randomness is passed in, so tests can be deterministic.
 */
public final class RetryPolicy {

    /** Default delay before the first retry: 1 s. */
    public static final Duration DEFAULT_INITIAL_DELAY = Duration.ofSeconds(1);
    /** Default growth factor between retries: 2.0. */
    public static final double DEFAULT_MULTIPLIER = 2.0;
    /** Default cap on one delay: 5 min. */
    public static final Duration DEFAULT_MAX_DELAY = Duration.ofMinutes(5);
    /** Default spread of each delay: 0.2 (±20 %). */
    public static final double DEFAULT_JITTER = 0.2;
    /** Default number of failed attempts after which a row is parked: 20. */
    public static final int DEFAULT_MAX_ATTEMPTS = 20;

    private static final RetryPolicy DEFAULTS = builder().build();

    private final Duration initialDelay;
    private final double multiplier;
    private final Duration maxDelay;
    private final double jitter;
    private final int maxAttempts;

    private RetryPolicy(Builder builder) {
        this.initialDelay = builder.initialDelay;
        this.multiplier = builder.multiplier;
        this.maxDelay = builder.maxDelay;
        this.jitter = builder.jitter;
        this.maxAttempts = builder.maxAttempts;
    }

    /** The policy with every default (see the class description). */
    public static RetryPolicy defaults() {
        return DEFAULTS;
    }

    /**
     * An exponential policy with every property given.
     *
     * @throws IllegalArgumentException naming the property when a value is out of range
     * @throws IllegalStateException    when {@code maxDelay} is shorter than {@code initialDelay}
     */
    public static RetryPolicy exponential(Duration initialDelay, double multiplier, Duration maxDelay, double jitter,
                                          int maxAttempts) {
        return builder().initialDelay(initialDelay).multiplier(multiplier).maxDelay(maxDelay).jitter(jitter)
                .maxAttempts(maxAttempts).build();
    }

    /** A builder starting from the defaults. */
    public static Builder builder() {
        return new Builder();
    }

    /** A builder starting from this policy's values. */
    public Builder toBuilder() {
        return new Builder().initialDelay(initialDelay).multiplier(multiplier).maxDelay(maxDelay).jitter(jitter)
                .maxAttempts(maxAttempts);
    }

    /**
     * What to do after an attempt failed.
     *
     * @param failedAttempts how many attempts of the row have failed, this one included (at least 1)
     * @param permanent      whether the failure can never succeed on retry
     * @param reason         why the attempt failed, kept as the row's last error
     * @param random         the source of jitter
     * @return retry after a delay, or park with a reason
     */
    public Decision decide(int failedAttempts, boolean permanent, String reason, RandomGenerator random) {
        Objects.requireNonNull(reason, "reason");
        Objects.requireNonNull(random, "random");
        if (failedAttempts < 1) {
            throw new IllegalArgumentException("failedAttempts must be >= 1, got: " + failedAttempts);
        }
        if (permanent) {
            return new Decision.Park("permanent failure: " + reason);
        }
        if (failedAttempts >= maxAttempts) {
            return new Decision.Park("gave up after " + failedAttempts + " attempts: " + reason);
        }
        return new Decision.Retry(delayAfter(failedAttempts, random), reason);
    }

    /**
     * The delay before the next attempt of a row that failed {@code failedAttempts} times, jitter
     * included; never longer than {@link #maxDelay()}.
     */
    public Duration delayAfter(int failedAttempts, RandomGenerator random) {
        if (failedAttempts < 1) {
            throw new IllegalArgumentException("failedAttempts must be >= 1, got: " + failedAttempts);
        }
        double maxNanos = maxDelay.toNanos();
        // Computed in doubles: a large attempt count overflows a long long before it reaches the cap.
        double base = Math.min(maxNanos, initialDelay.toNanos() * Math.pow(multiplier, failedAttempts - 1));
        double spread = jitter == 0 ? 1.0 : 1.0 + jitter * (2.0 * random.nextDouble() - 1.0);
        double nanos = Math.min(maxNanos, base * spread);
        return Duration.ofNanos(Math.max(0L, (long) nanos));
    }

    public Duration initialDelay() {
        return initialDelay;
    }

    public double multiplier() {
        return multiplier;
    }

    public Duration maxDelay() {
        return maxDelay;
    }

    public double jitter() {
        return jitter;
    }

    public int maxAttempts() {
        return maxAttempts;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof RetryPolicy that
                && initialDelay.equals(that.initialDelay)
                && Double.compare(multiplier, that.multiplier) == 0
                && maxDelay.equals(that.maxDelay)
                && Double.compare(jitter, that.jitter) == 0
                && maxAttempts == that.maxAttempts;
    }

    @Override
    public int hashCode() {
        return Objects.hash(initialDelay, multiplier, maxDelay, jitter, maxAttempts);
    }

    @Override
    public String toString() {
        return "RetryPolicy[initialDelay=" + initialDelay + ", multiplier=" + multiplier + ", maxDelay=" + maxDelay
                + ", jitter=" + jitter + ", maxAttempts=" + maxAttempts + "]";
    }

    /** The answer of {@link #decide}: retry after a delay, or park. */
    public sealed interface Decision {

        /**
         * Return the row to pending, due after {@code delay}.
         *
         * @param reason the failure, kept as the row's last error
         */
        record Retry(Duration delay, String reason) implements Decision {
            public Retry {
                Objects.requireNonNull(delay, "delay");
                Objects.requireNonNull(reason, "reason");
            }
        }

        /** Park the row until an operator replays it; {@code reason} says why it was given up on. */
        record Park(String reason) implements Decision {
            public Park {
                Objects.requireNonNull(reason, "reason");
            }
        }
    }

    /**
     * Builds a {@link RetryPolicy}. Each setter validates at once and names the property in its
     * {@link IllegalArgumentException}; {@link #build()} checks that the values fit together.
     */
    public static final class Builder {
        private Duration initialDelay = DEFAULT_INITIAL_DELAY;
        private double multiplier = DEFAULT_MULTIPLIER;
        private Duration maxDelay = DEFAULT_MAX_DELAY;
        private double jitter = DEFAULT_JITTER;
        private int maxAttempts = DEFAULT_MAX_ATTEMPTS;

        private Builder() {
        }

        /** The delay before the first retry; positive. Default 1 s. */
        public Builder initialDelay(Duration initialDelay) {
            this.initialDelay = positive(initialDelay, "initialDelay");
            return this;
        }

        /** How much each delay grows over the previous one; at least 1.0 and finite. Default 2.0. */
        public Builder multiplier(double multiplier) {
            if (!Double.isFinite(multiplier) || multiplier < 1.0) {
                throw new IllegalArgumentException("multiplier must be a finite number >= 1.0, got: " + multiplier);
            }
            this.multiplier = multiplier;
            return this;
        }

        /** The longest single delay; positive and not shorter than initialDelay. Default 5 min. */
        public Builder maxDelay(Duration maxDelay) {
            this.maxDelay = positive(maxDelay, "maxDelay");
            return this;
        }

        /** The spread of each delay, from 0 (none) up to but excluding 1. Default 0.2 (±20 %). */
        public Builder jitter(double jitter) {
            if (!(jitter >= 0.0 && jitter < 1.0)) {
                throw new IllegalArgumentException("jitter must be >= 0 and < 1, got: " + jitter);
            }
            this.jitter = jitter;
            return this;
        }

        /** How many failed attempts park a row; at least 1 (1 parks on the first failure). Default 20. */
        public Builder maxAttempts(int maxAttempts) {
            if (maxAttempts < 1) {
                throw new IllegalArgumentException("maxAttempts must be >= 1, got: " + maxAttempts);
            }
            this.maxAttempts = maxAttempts;
            return this;
        }

        /**
         * The policy.
         *
         * @throws IllegalStateException when maxDelay is shorter than initialDelay
         */
        public RetryPolicy build() {
            if (maxDelay.compareTo(initialDelay) < 0) {
                throw new IllegalStateException("maxDelay (" + maxDelay + ") must not be shorter than initialDelay ("
                        + initialDelay + ")");
            }
            return new RetryPolicy(this);
        }

        private static Duration positive(Duration value, String property) {
            if (value == null || value.isNegative() || value.isZero()) {
                throw new IllegalArgumentException(property + " must be a positive duration, got: " + value);
            }
            return value;
        }
    }
}
