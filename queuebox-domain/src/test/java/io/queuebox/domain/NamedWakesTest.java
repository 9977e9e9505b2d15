package io.queuebox.domain;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.WakeReason;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class NamedWakesTest {

    private final NamedWakes wakes = new NamedWakes(100);
    private final UUID a = UUID.randomUUID();
    private final UUID b = UUID.randomUUID();

    @Test
    void withNoClaimUnderWayAnUnclaimedRowWakesAtOnce() {
        assertThat(wakes.arrived(a, WakeReason.CAPTURE)).isTrue();
    }

    @Test
    void aRowClaimedAlreadyWakesNothing() {
        wakes.arrived(b, WakeReason.CAPTURE); // a source that names rows is at work
        wakes.claimStarted();
        wakes.claimEnded(List.of(a));

        assertThat(wakes.arrived(a, WakeReason.CAPTURE)).isFalse();
    }

    @Test
    void aRowNamedDuringAClaimThatTookItWakesNothingWhenTheClaimEnds() {
        wakes.claimStarted();
        assertThat(wakes.arrived(a, WakeReason.CAPTURE)).isFalse();

        assertThat(wakes.claimEnded(List.of(a))).isNull();
    }

    @Test
    void aRowNamedDuringAClaimThatMissedItWakesWhenTheLastClaimUnderWayEnds() {
        wakes.claimStarted();
        wakes.claimStarted();
        assertThat(wakes.arrived(b, WakeReason.CAPTURE)).isFalse();

        assertThat(wakes.claimEnded(List.of(a))).as("another claim is still under way").isNull();
        assertThat(wakes.claimEnded(List.of())).isEqualTo(WakeReason.CAPTURE);
    }

    @Test
    void claimsAreNotRememberedBeforeAnyWakeUpNamedARow() {
        wakes.claimStarted();
        wakes.claimEnded(List.of(a));

        assertThat(wakes.arrived(a, WakeReason.CAPTURE)).as("polling and notify pay nothing per claimed row").isTrue();
    }

    @Test
    void aReleasedRowWakesAgain() {
        wakes.arrived(b, WakeReason.CAPTURE);
        wakes.claimStarted();
        wakes.claimEnded(List.of(a));

        wakes.released(List.of(a));

        assertThat(wakes.arrived(a, WakeReason.CAPTURE)).isTrue();
    }
}
