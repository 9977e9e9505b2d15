package io.queuebox.bootstrap.logs;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.testkit.MutableClock;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class LineBudgetTest {

    private final MutableClock clock = MutableClock.create();
    private final LineBudget parkings = new LineBudget(10, Duration.ofSeconds(30), clock);

    @Test
    void theFirstLinesOfAWindowAreLoggedAndTheRestCountedUntilTheWindowIsOver() {
        int logged = 0;
        for (int i = 0; i < 250; i++) {
            logged += parkings.tryAcquire() ? 1 : 0;
        }
        assertThat(logged).isEqualTo(10);
        clock.advance(Duration.ofSeconds(29));
        assertThat(parkings.roll()).isEmpty();

        clock.advance(Duration.ofSeconds(1));

        assertThat(parkings.roll()).contains(new LineBudget.Suppressed(240, Duration.ofSeconds(30)));
        assertThat(parkings.tryAcquire()).as("a new window logs again").isTrue();
    }

    @Test
    void aWindowWithinItsBudgetEndsWithoutACount() {
        parkings.tryAcquire();
        clock.advance(Duration.ofSeconds(31));

        assertThat(parkings.roll()).isEmpty();
        assertThat(parkings.flush()).isEmpty();
    }

    @Test
    void flushCountsWhatTheOpenWindowHeldBack() {
        for (int i = 0; i < 12; i++) {
            parkings.tryAcquire();
        }
        clock.advance(Duration.ofSeconds(5));

        assertThat(parkings.flush()).contains(new LineBudget.Suppressed(2, Duration.ofSeconds(5)));
    }
}
