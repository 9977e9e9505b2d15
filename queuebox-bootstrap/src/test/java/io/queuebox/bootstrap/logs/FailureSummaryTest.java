package io.queuebox.bootstrap.logs;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.testkit.MutableClock;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class FailureSummaryTest {

    private final MutableClock clock = MutableClock.create();
    private final FailureSummary publishes = new FailureSummary("publish", "publishes", Duration.ofSeconds(30), clock);

    @Test
    void theFirstFailureAfterAQuietSpellIsToldAtOnce() {
        publishes.add("retriable", 1, "nacked by RabbitMQ");

        assertThat(publishes.atOnce()).contains("1 publish failed: 1 retriable (nacked by RabbitMQ)");
    }

    @Test
    void aFloodIsOneLinePerWindowWithTheCountsByKindAndTheFirstCauseOfEach() {
        publishes.add("retriable", 12, "nacked by RabbitMQ");
        assertThat(publishes.atOnce()).isPresent();

        for (int second = 1; second < 30; second++) {
            clock.advance(Duration.ofSeconds(1));
            publishes.add("not attempted", 100, "RabbitMQ unavailable: connection lost (" + second + ")");
            publishes.add("retriable", 1, "nacked by RabbitMQ");
            assertThat(publishes.atOnce()).as("second %d", second).isEmpty();
            assertThat(publishes.due()).as("second %d", second).isEmpty();
        }
        clock.advance(Duration.ofSeconds(1));

        assertThat(publishes.due()).contains("2,929 publishes failed in the last 30 s: 2,900 not attempted"
                + " (RabbitMQ unavailable: connection lost (1)), 29 retriable (nacked by RabbitMQ)");
        assertThat(publishes.due()).as("nothing pending after the line").isEmpty();
    }

    @Test
    void failuresHeldBackWhileADependencyIsDownComeOutAWindowAfterTheFirstOfThem() {
        publishes.add("not attempted", 100, "RabbitMQ unavailable");
        clock.advance(Duration.ofSeconds(29));
        assertThat(publishes.due()).isEmpty();

        clock.advance(Duration.ofSeconds(1));

        assertThat(publishes.due()).contains("100 publishes failed in the last 30 s: 100 not attempted (RabbitMQ unavailable)");
    }

    @Test
    void flushTellsWhatIsPendingAtOnceAndNothingWhenNothingIs() {
        assertThat(publishes.flush()).isEmpty();
        publishes.add("permanent", 3, "no such destination");
        clock.advance(Duration.ofMillis(8_100));

        assertThat(publishes.flush()).contains("3 publishes failed in the last 8.1 s: 3 permanent (no such destination)");
    }

    @Test
    void aSubjectWithOneKindIsToldByItsCause() {
        FailureSummary claims = new FailureSummary("claim", "claims", Duration.ofSeconds(30), clock);
        claims.add("", 1, "57P01 terminating connection due to administrator command");
        claims.add("", 4, "08001 Connection to 127.0.0.1:5432 refused.");
        clock.advance(Duration.ofSeconds(2));

        assertThat(claims.flush()).contains("5 claims failed in the last 2 s: 57P01 terminating connection due to"
                + " administrator command");
    }
}
