package io.queuebox.bootstrap.logs;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.testkit.MutableClock;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class OutageTest {

    private final MutableClock clock = MutableClock.create();
    private final Outage database = new Outage("database", Duration.ofSeconds(2), clock);

    @Test
    void anOutageIsOneDownLineAndOneRecoveredLineWithHowLongItLasted() {
        assertThat(database.worked()).as("up: nothing to say").isEmpty();
        assertThat(database.failed("57P01 terminating connection due to administrator command"))
                .contains("database down: 57P01 terminating connection due to administrator command");
        for (int i = 0; i < 8; i++) {
            clock.advance(Duration.ofSeconds(1));
            assertThat(database.failed("08001 Connection to 127.0.0.1:5432 refused.")).isEmpty();
        }
        clock.advance(Duration.ofSeconds(1));
        assertThat(database.worked()).as("working, not yet for the settle time").isEmpty();
        clock.advance(Duration.ofSeconds(1));
        assertThat(database.worked()).contains("database recovered after 9 s");
        assertThat(database.worked()).isEmpty();
        assertThat(database.isDown()).isFalse();
    }

    @Test
    void aFailureBetweenSuccessesBeforeItSettledKeepsItOneOutage() {
        database.failed("57P01 terminating connection due to administrator command");
        clock.advance(Duration.ofMillis(300));
        assertThat(database.worked()).isEmpty();
        clock.advance(Duration.ofMillis(500));
        assertThat(database.failed("08006 An I/O error occurred while sending to the backend.")).as("a stale connection")
                .isEmpty();
        clock.advance(Duration.ofMillis(200));
        assertThat(database.worked()).isEmpty();
        clock.advance(Duration.ofSeconds(2));

        assertThat(database.worked()).contains("database recovered after 1 s");
    }
}
