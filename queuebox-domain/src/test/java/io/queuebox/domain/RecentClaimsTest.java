package io.queuebox.domain;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class RecentClaimsTest {

    private final UUID a = UUID.randomUUID();
    private final UUID b = UUID.randomUUID();
    private final UUID c = UUID.randomUUID();

    @Test
    void remembersWhatWasClaimed() {
        RecentClaims claims = new RecentClaims(10);
        claims.claimed(List.of(a, b));

        assertThat(claims.contains(a)).isTrue();
        assertThat(claims.contains(b)).isTrue();
        assertThat(claims.contains(c)).isFalse();
    }

    @Test
    void aReleasedRowIsDueAgainAndForgotten() {
        RecentClaims claims = new RecentClaims(10);
        claims.claimed(List.of(a, b));

        claims.released(List.of(a), new java.util.ArrayList<>());

        assertThat(claims.contains(a)).isFalse();
        assertThat(claims.contains(b)).isTrue();
    }

    @Test
    void keepsOnlyTheNewestUpToItsCapacity() {
        RecentClaims claims = new RecentClaims(2);
        claims.claimed(List.of(a, b));
        claims.claimed(List.of(c));

        assertThat(claims.contains(a)).isFalse();
        assertThat(claims.contains(b)).isTrue();
        assertThat(claims.contains(c)).isTrue();
    }

    @Test
    void aRowClaimedAgainAfterItsReleaseIsRememberedAgain() {
        RecentClaims claims = new RecentClaims(10);
        claims.claimed(List.of(a));
        claims.released(List.of(a), new java.util.ArrayList<>());

        claims.claimed(List.of(a));

        assertThat(claims.contains(a)).isTrue();
    }

    @Test
    void aReleaseAnswersWhetherAWakeUpAboutARowWasSkipped() {
        RecentClaims claims = new RecentClaims(10);
        claims.claimed(List.of(a, b));

        assertThat(claims.skipWakeFor(a)).isTrue();
        assertThat(claims.skipWakeFor(c)).as("not claimed").isFalse();
        assertThat(claims.released(List.of(b), new java.util.ArrayList<>())).isFalse();
        assertThat(claims.released(List.of(a), new java.util.ArrayList<>())).isTrue();
        assertThat(claims.contains(c)).isFalse();
    }

    @Test
    void refusesACapacityBelowOne() {
        assertThatThrownBy(() -> new RecentClaims(0)).hasMessageContaining("capacity must be at least 1, got 0");
    }
}
