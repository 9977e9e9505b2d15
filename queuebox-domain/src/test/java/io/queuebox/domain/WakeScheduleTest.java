package io.queuebox.domain;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.WakeReason;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class WakeScheduleTest {

    private static final Duration INTERVAL = Duration.ofSeconds(1);

    private static WakeSchedule.Wake next(Optional<Duration> retry, Optional<Duration> lease,
                                          Optional<WakeReason> pending, boolean shutdown) {
        return WakeSchedule.next(INTERVAL, retry, lease, pending, shutdown);
    }

    @Test
    void withNothingKnownTheIntervalDecides() {
        assertThat(next(Optional.empty(), Optional.empty(), Optional.empty(), false))
                .isEqualTo(new WakeSchedule.Wake(INTERVAL, WakeReason.INTERVAL));
    }

    @Test
    void aRetryDueBeforeTheIntervalWins() {
        assertThat(next(Optional.of(Duration.ofMillis(300)), Optional.empty(), Optional.empty(), false))
                .isEqualTo(new WakeSchedule.Wake(Duration.ofMillis(300), WakeReason.DEADLINE));
    }

    @Test
    void aLeaseExpiringBeforeTheRetryWins() {
        assertThat(next(Optional.of(Duration.ofMillis(300)), Optional.of(Duration.ofMillis(200)), Optional.empty(),
                false)).isEqualTo(new WakeSchedule.Wake(Duration.ofMillis(200), WakeReason.DEADLINE));
    }

    @Test
    void deadlinesAfterTheIntervalDoNotMatter() {
        assertThat(next(Optional.of(Duration.ofSeconds(5)), Optional.of(Duration.ofSeconds(3)), Optional.empty(),
                false)).isEqualTo(new WakeSchedule.Wake(INTERVAL, WakeReason.INTERVAL));
    }

    @Test
    void aPassedDeadlineWakesAtOnce() {
        assertThat(next(Optional.of(Duration.ofMillis(-5)), Optional.empty(), Optional.empty(), false))
                .isEqualTo(new WakeSchedule.Wake(Duration.ZERO, WakeReason.DEADLINE));
    }

    @Test
    void aPendingWakeUpWakesAtOnceWithItsReason() {
        assertThat(next(Optional.of(Duration.ofMillis(1)), Optional.empty(), Optional.of(WakeReason.CAPTURE), false))
                .isEqualTo(new WakeSchedule.Wake(Duration.ZERO, WakeReason.CAPTURE));
    }

    @Test
    void shutdownWinsOverEverything() {
        assertThat(next(Optional.of(Duration.ZERO), Optional.empty(), Optional.of(WakeReason.EXTERNAL), true))
                .isEqualTo(new WakeSchedule.Wake(Duration.ZERO, WakeReason.SHUTDOWN));
    }

    @Test
    void anExhaustedIntervalWakesAtOnce() {
        assertThat(WakeSchedule.next(Duration.ZERO, Optional.empty(), Optional.empty(), Optional.empty(), false))
                .isEqualTo(new WakeSchedule.Wake(Duration.ZERO, WakeReason.INTERVAL));
    }
}
