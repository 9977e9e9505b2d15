package io.queuebox.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class MutableClockTest {

    @Test
    void standsStillUntilMoved() {
        MutableClock clock = MutableClock.create();

        assertThat(clock.instant()).isEqualTo(MutableClock.DEFAULT_START).isEqualTo(clock.instant());
    }

    @Test
    void advancesAndCanBeSetBackwards() {
        MutableClock clock = MutableClock.at(Instant.parse("2026-03-01T10:00:00Z"));

        assertThat(clock.advance(Duration.ofSeconds(5))).isEqualTo(Instant.parse("2026-03-01T10:00:05Z"));
        assertThat(clock.advanceMillis(250)).isEqualTo(Instant.parse("2026-03-01T10:00:05.250Z"));
        clock.set(Instant.parse("2026-03-01T09:00:00Z"));
        assertThat(clock.millis()).isEqualTo(Instant.parse("2026-03-01T09:00:00Z").toEpochMilli());
    }

    @Test
    void aZonedCopySharesTheInstant() {
        MutableClock clock = MutableClock.create();
        Clock paris = clock.withZone(ZoneId.of("Europe/Paris"));

        clock.advance(Duration.ofHours(1));

        assertThat(paris.instant()).isEqualTo(clock.instant());
        assertThat(paris.getZone()).isEqualTo(ZoneId.of("Europe/Paris"));
    }

    @Test
    void concurrentAdvancesAreNotLost() throws InterruptedException {
        MutableClock clock = MutableClock.create();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            Thread thread = new Thread(() -> {
                for (int i = 0; i < 1000; i++) {
                    clock.advanceMillis(1);
                }
            });
            threads.add(thread);
            thread.start();
        }
        for (Thread thread : threads) {
            thread.join();
        }

        assertThat(clock.instant()).isEqualTo(MutableClock.DEFAULT_START.plusMillis(4000));
    }
}
