package io.queuebox.domain;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.random.RandomGenerator;
import org.junit.jupiter.api.Test;

class RetryPolicyTest {

    /** A generator whose nextDouble() is always {@code value}: 0.5 is "no jitter", 0 the low end, ~1 the high end. */
    private static RandomGenerator fixed(double value) {
        return new RandomGenerator() {
            @Override
            public long nextLong() {
                throw new UnsupportedOperationException();
            }

            @Override
            public double nextDouble() {
                return value;
            }
        };
    }

    private static final RandomGenerator MIDDLE = fixed(0.5);

    @Test
    void defaultsAreTheDocumentedOnes() {
        RetryPolicy policy = RetryPolicy.defaults();

        assertThat(policy.initialDelay()).isEqualTo(Duration.ofSeconds(1));
        assertThat(policy.multiplier()).isEqualTo(2.0);
        assertThat(policy.maxDelay()).isEqualTo(Duration.ofMinutes(5));
        assertThat(policy.jitter()).isEqualTo(0.2);
        assertThat(policy.maxAttempts()).isEqualTo(20);
    }

    @Test
    void delaysGrowExponentiallyUpToTheCap() {
        RetryPolicy policy = RetryPolicy.defaults();

        assertThat(policy.delayAfter(1, MIDDLE)).isEqualTo(Duration.ofSeconds(1));
        assertThat(policy.delayAfter(2, MIDDLE)).isEqualTo(Duration.ofSeconds(2));
        assertThat(policy.delayAfter(3, MIDDLE)).isEqualTo(Duration.ofSeconds(4));
        assertThat(policy.delayAfter(9, MIDDLE)).isEqualTo(Duration.ofSeconds(256));
        assertThat(policy.delayAfter(10, MIDDLE)).isEqualTo(Duration.ofMinutes(5));
        assertThat(policy.delayAfter(10_000, MIDDLE)).isEqualTo(Duration.ofMinutes(5));
    }

    @Test
    void defaultRetriesLastAboutAnHourBeforeParking() {
        RetryPolicy policy = RetryPolicy.defaults();
        Duration total = Duration.ZERO;
        for (int failed = 1; failed < policy.maxAttempts(); failed++) {
            total = total.plus(policy.delayAfter(failed, MIDDLE));
        }

        assertThat(total).isBetween(Duration.ofMinutes(50), Duration.ofMinutes(70));
    }

    @Test
    void jitterSpreadsEachDelayWithinItsBand() {
        RetryPolicy policy = RetryPolicy.defaults();

        assertThat(policy.delayAfter(3, fixed(0.0))).isEqualTo(Duration.ofMillis(3200));
        assertThat(policy.delayAfter(3, fixed(0.999_999))).isBetween(Duration.ofMillis(4799), Duration.ofMillis(4800));
    }

    @Test
    void jitterNeverPushesADelayPastTheCap() {
        assertThat(RetryPolicy.defaults().delayAfter(15, fixed(0.999_999))).isEqualTo(Duration.ofMinutes(5));
    }

    @Test
    void aRetriableFailureBelowTheLimitIsRetriedWithItsReason() {
        RetryPolicy.Decision decision = RetryPolicy.defaults().decide(2, false, "timeout", MIDDLE);

        assertThat(decision).isEqualTo(new RetryPolicy.Decision.Retry(Duration.ofSeconds(2), "timeout"));
    }

    @Test
    void theLastAllowedAttemptParks() {
        RetryPolicy.Decision decision = RetryPolicy.defaults().decide(20, false, "timeout", MIDDLE);

        assertThat(decision).isEqualTo(new RetryPolicy.Decision.Park("gave up after 20 attempts: timeout"));
    }

    @Test
    void thePreviousAttemptIsStillRetried() {
        assertThat(RetryPolicy.defaults().decide(19, false, "timeout", MIDDLE))
                .isInstanceOf(RetryPolicy.Decision.Retry.class);
    }

    @Test
    void aPermanentFailureParksAtOnce() {
        RetryPolicy.Decision decision = RetryPolicy.defaults().decide(1, true, "message too large", MIDDLE);

        assertThat(decision).isEqualTo(new RetryPolicy.Decision.Park("permanent failure: message too large"));
    }

    @Test
    void exponentialFactoryTakesEveryProperty() {
        RetryPolicy policy = RetryPolicy.exponential(Duration.ofMillis(10), 3.0, Duration.ofMillis(100), 0.0, 4);

        assertThat(policy.delayAfter(1, fixed(0.0))).isEqualTo(Duration.ofMillis(10));
        assertThat(policy.delayAfter(2, fixed(0.0))).isEqualTo(Duration.ofMillis(30));
        assertThat(policy.delayAfter(3, fixed(0.0))).isEqualTo(Duration.ofMillis(90));
        assertThat(policy.delayAfter(4, fixed(0.0))).isEqualTo(Duration.ofMillis(100));
        assertThat(policy.decide(4, false, "x", MIDDLE)).isInstanceOf(RetryPolicy.Decision.Park.class);
    }

    @Test
    void maxAttemptsOfOneParksOnTheFirstFailure() {
        RetryPolicy policy = RetryPolicy.builder().maxAttempts(1).build();

        assertThat(policy.decide(1, false, "boom", MIDDLE))
                .isEqualTo(new RetryPolicy.Decision.Park("gave up after 1 attempts: boom"));
    }

    @Test
    void builderNamesTheBadProperty() {
        assertThatThrownBy(() -> RetryPolicy.builder().initialDelay(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("initialDelay");
        assertThatThrownBy(() -> RetryPolicy.builder().initialDelay(null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("initialDelay");
        assertThatThrownBy(() -> RetryPolicy.builder().multiplier(0.5))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("multiplier");
        assertThatThrownBy(() -> RetryPolicy.builder().multiplier(Double.NaN))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("multiplier");
        assertThatThrownBy(() -> RetryPolicy.builder().maxDelay(Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxDelay");
        assertThatThrownBy(() -> RetryPolicy.builder().jitter(1.0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("jitter");
        assertThatThrownBy(() -> RetryPolicy.builder().jitter(-0.1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("jitter");
        assertThatThrownBy(() -> RetryPolicy.builder().maxAttempts(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxAttempts");
    }

    @Test
    void aCapBelowTheFirstDelayIsAConflict() {
        assertThatThrownBy(() -> RetryPolicy.builder().initialDelay(Duration.ofSeconds(10))
                .maxDelay(Duration.ofSeconds(1)).build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("maxDelay").hasMessageContaining("initialDelay");
    }

    @Test
    void decideRejectsAnAttemptCountBelowOne() {
        assertThatThrownBy(() -> RetryPolicy.defaults().decide(0, false, "x", MIDDLE))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("failedAttempts");
    }

    @Test
    void toBuilderRoundTrips() {
        RetryPolicy policy = RetryPolicy.exponential(Duration.ofMillis(10), 3.0, Duration.ofMillis(100), 0.1, 4);

        assertThat(policy.toBuilder().build()).isEqualTo(policy).hasSameHashCodeAs(policy);
    }
}
