package io.queuebox.domain;

import static io.queuebox.domain.Fixtures.T0;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;

class DeadlinesTest {

    private final Deadlines deadlines = new Deadlines(Clock.fixed(T0, ZoneOffset.UTC));

    @Test
    void nothingKnownIsEmpty() {
        assertThat(deadlines.untilNextRetry()).isEmpty();
        assertThat(deadlines.untilNextLeaseExpiry()).isEmpty();
    }

    @Test
    void reportsTheEarliestOfEachKind() {
        deadlines.retryDueAt(T0.plusSeconds(5));
        deadlines.retryDueAt(T0.plusSeconds(2));
        deadlines.leaseExpiresAt(T0.plusSeconds(30));

        assertThat(deadlines.untilNextRetry()).contains(Duration.ofSeconds(2));
        assertThat(deadlines.untilNextLeaseExpiry()).contains(Duration.ofSeconds(30));
    }

    @Test
    void aPassedDeadlineIsDueNowUntilAClaimCoversIt() {
        deadlines.retryDueAt(T0.minusSeconds(1));
        deadlines.retryDueAt(T0.plusSeconds(3));

        assertThat(deadlines.untilNextRetry()).contains(Duration.ZERO);
        deadlines.reachedAt(T0);
        assertThat(deadlines.untilNextRetry()).contains(Duration.ofSeconds(3));
    }

    @Test
    void aClaimCoversDeadlinesOfBothKindsUpToItsStart() {
        deadlines.retryDueAt(T0);
        deadlines.leaseExpiresAt(T0.minusMillis(1));

        deadlines.reachedAt(T0);

        assertThat(deadlines.untilNextRetry()).isEmpty();
        assertThat(deadlines.untilNextLeaseExpiry()).isEmpty();
    }
}
