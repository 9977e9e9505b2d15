package io.queuebox.domain;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class CaptureRestartBackoffTest {

    private static final Duration QUICKLY = Duration.ofSeconds(2);

    @Test
    void noDelayBeforeAnyFailure() {
        assertThat(CaptureRestartBackoff.initial().delay()).isZero();
    }

    @Test
    void startsAtOneSecondAndDoublesUpToThirty() {
        CaptureRestartBackoff backoff = CaptureRestartBackoff.initial();
        List<Long> seconds = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            backoff = backoff.failedAfter(QUICKLY);
            seconds.add(backoff.delay().toSeconds());
        }

        assertThat(seconds).containsExactly(1L, 2L, 4L, 8L, 16L, 30L, 30L, 30L);
    }

    @Test
    void manyFailuresStayAtTheCap() {
        CaptureRestartBackoff backoff = CaptureRestartBackoff.initial();
        for (int i = 0; i < 1000; i++) {
            backoff = backoff.failedAfter(QUICKLY);
        }

        assertThat(backoff.delay()).isEqualTo(Duration.ofSeconds(30));
        assertThat(backoff.consecutiveFailures()).isEqualTo(1000);
    }

    @Test
    void aHealthyRunResetsTheBackoff() {
        CaptureRestartBackoff backoff = CaptureRestartBackoff.initial().failedAfter(QUICKLY).failedAfter(QUICKLY)
                .failedAfter(QUICKLY);

        assertThat(backoff.healthy()).isEqualTo(CaptureRestartBackoff.initial());
        assertThat(backoff.healthy().failedAfter(QUICKLY).delay()).isEqualTo(Duration.ofSeconds(1));
    }

    @Test
    void aFailureAfterALongHealthyRunCountsAsTheFirstAgain() {
        CaptureRestartBackoff backoff = CaptureRestartBackoff.initial().failedAfter(QUICKLY).failedAfter(QUICKLY)
                .failedAfter(QUICKLY).failedAfter(CaptureRestartBackoff.HEALTHY_RUN);

        assertThat(backoff.delay()).isEqualTo(Duration.ofSeconds(1));
    }
}
