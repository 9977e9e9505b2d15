package io.queuebox.domain;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.WakeReason;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

class NamedWakesTest {

    private final NamedWakes wakes = new NamedWakes(100);
    private final UUID a = UUID.randomUUID();
    private final UUID b = UUID.randomUUID();
    private final UUID c = UUID.randomUUID();

    private static List<ClaimedDelivery> rows(UUID... ids) {
        List<ClaimedDelivery> rows = new ArrayList<>();
        for (UUID id : ids) {
            rows.add(new ClaimedDelivery(rows.size() + 1, new OutboxEvent(id, "order", "1", "Changed", null,
                    new byte[0], null, Map.of()), 0, LeaseToken.random(), Instant.EPOCH));
        }
        return rows;
    }

    /** A source that names rows is at work from here on: claims are remembered. */
    private void namingStarted() {
        wakes.arrived(c, WakeReason.CAPTURE, true);
        wakes.numbered(List.of(c), 0);
    }

    @Test
    void withNoClaimUnderWayAnUnclaimedRowWakesAtOnce() {
        assertThat(wakes.arrived(a, WakeReason.CAPTURE, true)).isTrue();
    }

    @Test
    void aRowClaimedAlreadyWakesNothing() {
        namingStarted();
        wakes.claimEnded(wakes.claimStarted(), rows(a));

        assertThat(wakes.arrived(a, WakeReason.CAPTURE, true)).isFalse();
    }

    @Test
    void claimsAreNotRememberedBeforeAnyWakeUpNamedARow() {
        wakes.claimEnded(wakes.claimStarted(), rows(a));

        assertThat(wakes.arrived(a, WakeReason.CAPTURE, true)).as("polling and notify pay nothing per claimed row").isTrue();
    }

    @Test
    void aRowNamedDuringAClaimThatTookItWakesNothingWhenTheClaimEnds() {
        long claim = wakes.claimStarted();
        assertThat(wakes.arrived(a, WakeReason.CAPTURE, true)).isFalse();
        assertThat(wakes.holding()).isTrue();

        assertThat(wakes.claimEnded(claim, rows(a))).isNull();
        assertThat(wakes.holding()).isFalse();
    }

    @Test
    void aRowNamedDuringAClaimIsSettledByTheFirstClaimThatStartedAfterIt() {
        long first = wakes.claimStarted();
        assertThat(wakes.arrived(b, WakeReason.CAPTURE, true)).isFalse();
        long second = wakes.claimStarted();

        assertThat(wakes.claimEnded(second, rows())).as("it looked after the news and did not find the row")
                .isEqualTo(WakeReason.CAPTURE);
        assertThat(wakes.holding()).isFalse();
        assertThat(wakes.claimEnded(first, rows())).as("settled once").isNull();
    }

    @Test
    void aRowNamedDuringTwoClaimsWaitsForTheLastOfThemWhenNeitherStartedAfterIt() {
        long first = wakes.claimStarted();
        long second = wakes.claimStarted();
        assertThat(wakes.arrived(b, WakeReason.CAPTURE, true)).isFalse();

        assertThat(wakes.claimEnded(first, rows(a))).as("another claim is still under way").isNull();
        assertThat(wakes.claimEnded(second, rows())).isEqualTo(WakeReason.CAPTURE);
    }

    @Test
    void aClaimUnderWayLongerThanTheHoldLimitHoldsNothing() {
        wakes.claimStarted();
        LockSupport.parkNanos(NamedWakes.HOLD_LIMIT.plusMillis(5).toNanos());

        assertThat(wakes.arrived(a, WakeReason.CAPTURE, true)).as("a hung claim must not keep the row from idle workers")
                .isTrue();
    }

    @Test
    void rowsHeldPastTheHoldLimitBecomeOneWakeUp() {
        assertThat(wakes.untilHeldExpire()).isEmpty();
        wakes.claimStarted();
        wakes.arrived(a, WakeReason.CAPTURE, true);
        wakes.arrived(b, WakeReason.CAPTURE, true);

        assertThat(wakes.untilHeldExpire()).hasValueSatisfying(left ->
                assertThat(left).isLessThanOrEqualTo(NamedWakes.HOLD_LIMIT));
        assertThat(wakes.expireHeld()).as("not yet").isNull();
        LockSupport.parkNanos(NamedWakes.HOLD_LIMIT.plusMillis(5).toNanos());
        assertThat(wakes.expireHeld()).isEqualTo(WakeReason.CAPTURE);
        assertThat(wakes.expireHeld()).as("once").isNull();
        assertThat(wakes.holding()).isFalse();
    }

    @Test
    void aRowHeldDuringItsOwnClaimIsMarkedSoThatItsReleaseWakes() {
        long claim = wakes.claimStarted();
        assertThat(wakes.arrived(a, WakeReason.CAPTURE, true)).isFalse();
        assertThat(wakes.claimEnded(claim, rows(a))).isNull();

        assertThat(wakes.released(List.of(a))).isEqualTo(WakeReason.CAPTURE);
    }

    @Test
    void aReleasedRowWakesAgain() {
        namingStarted();
        wakes.claimEnded(wakes.claimStarted(), rows(a));

        assertThat(wakes.released(List.of(a))).as("no wake-up about it was skipped").isNull();

        assertThat(wakes.arrived(a, WakeReason.CAPTURE, true)).isTrue();
    }

    @Test
    void releasingARowWhoseWakeUpWasSkippedAnswersThatWakeUp() {
        namingStarted();
        wakes.claimEnded(wakes.claimStarted(), rows(a, b));
        assertThat(wakes.arrived(a, WakeReason.CAPTURE, true)).isFalse();

        assertThat(wakes.released(List.of(b))).isNull();
        assertThat(wakes.released(List.of(a))).isEqualTo(WakeReason.CAPTURE);
    }
    @Test
    void aRowNamedRightAfterItsCommitIsNotHeldForAClaimUnderWay() {
        namingStarted();
        wakes.claimStarted();

        assertThat(wakes.arrived(a, WakeReason.EXTERNAL, false)).as("that claim started before the commit").isTrue();
        assertThat(wakes.holding()).isFalse();
    }

    @Test
    void newsAboutARowNoClaimTookSinceIsWorthALook() {
        namingStarted();
        assertThat(wakes.arrived(a, WakeReason.EXTERNAL, false)).isTrue();
        assertThat(wakes.unclaimedNewsAfter(1_000, false, false)).as("before its number comes, later than any news").isTrue();
        wakes.numbered(List.of(a), 7);

        assertThat(wakes.unclaimedNewsAfter(6, false, false)).as("news 7 names a row still unclaimed").isTrue();
        assertThat(wakes.unclaimedNewsAfter(7, false, false)).as("nothing after news 7").isFalse();
    }

    @Test
    void newsAboutARowAClaimTookIsNotWorthALook() {
        namingStarted();
        wakes.arrived(a, WakeReason.EXTERNAL, false);
        wakes.arrived(b, WakeReason.EXTERNAL, false);
        wakes.numbered(List.of(a, b), 7);

        wakes.claimEnded(wakes.claimStarted(), rows(a));
        assertThat(wakes.unclaimedNewsAfter(6, false, false)).as("b is still unclaimed").isTrue();
        wakes.claimEnded(wakes.claimStarted(), rows(b));
        assertThat(wakes.unclaimedNewsAfter(6, false, false)).isFalse();
    }

    @Test
    void aRowClaimedBeforeItsNewsWasNumberedIsNotTracked() {
        namingStarted();
        wakes.arrived(a, WakeReason.EXTERNAL, false);
        wakes.claimEnded(wakes.claimStarted(), rows(a)); // the woken worker was quicker than the waker

        wakes.numbered(List.of(a), 7);

        assertThat(wakes.unclaimedNewsAfter(6, false, false)).isFalse();
    }

    @Test
    void newsPushedOutOfTheBoundIsStillWorthALook() {
        namingStarted();
        UUID never = UUID.randomUUID();
        wakes.arrived(never, WakeReason.EXTERNAL, false); // its waker never numbered it
        wakes.arrived(a, WakeReason.EXTERNAL, false);
        wakes.numbered(List.of(a), 1);
        for (int i = 0; i < 5000; i++) {
            UUID other = UUID.randomUUID(); // rows another relay claimed: never claimed here
            wakes.arrived(other, WakeReason.EXTERNAL, false);
            wakes.numbered(List.of(other), 2);
        }
        wakes.claimEnded(wakes.claimStarted(), rows(a));

        assertThat(wakes.unclaimedNewsAfter(1, false, false)).as("rows of news 2 were forgotten unclaimed").isTrue();
        assertThat(wakes.unclaimedNewsAfter(2, false, false)).as("a row never numbered, pushed out, counts as no later than news 2")
                .isFalse();
    }

    @Test
    void aRowAPeersClaimStartedAfterItsNewsIsLookingForIsHeldForThatClaimInsteadOfASecondLook() {
        namingStarted();
        wakes.arrived(a, WakeReason.EXTERNAL, false);
        wakes.numbered(List.of(a), 7);
        long peers = wakes.claimStarted();

        assertThat(wakes.unclaimedNewsAfter(6, true, false)).as("the peer's claim looks for a").isFalse();
        assertThat(wakes.holding()).isTrue();
        assertThat(wakes.claimEnded(peers, rows())).as("it came back without a: wake").isEqualTo(WakeReason.EXTERNAL);
    }

    @Test
    void aLookAStageAskedForHoldsItsRowsSoThatAnotherStageLeavesThemToIt() {
        namingStarted();
        wakes.claimEnded(wakes.claimStarted(), rows(c));
        wakes.arrived(a, WakeReason.EXTERNAL, false);
        wakes.numbered(List.of(a), 7);

        assertThat(wakes.unclaimedNewsAfter(6, true, true)).as("the first stage asks for a look").isTrue();
        assertThat(wakes.holding()).as("a is held for that look before it starts").isTrue();
        assertThat(wakes.noNamedRowAwaitsAClaim()).as("an idle worker's ticket for a asks for no claim").isTrue();
        assertThat(wakes.unclaimedNewsAfter(5, true, true)).as("the second stage leaves a to the look").isFalse();

        long look = wakes.secondLookStarted(6);
        assertThat(wakes.claimEnded(look, rows(a))).as("the look took a").isNull();
        assertThat(wakes.holding()).isFalse();
        assertThat(wakes.unclaimedNewsAfter(5, true, true)).isFalse();
    }

    @Test
    void aLookAStageAskedForThatNeverStartsHoldsItsRowsOnlyUntilTheHoldLimit() {
        NamedWakes shortHolds = new NamedWakes(100, java.time.Duration.ofMillis(20));
        shortHolds.arrived(c, WakeReason.CAPTURE, true);
        shortHolds.numbered(List.of(c), 0);
        shortHolds.arrived(a, WakeReason.EXTERNAL, false);
        shortHolds.numbered(List.of(a), 7);
        assertThat(shortHolds.unclaimedNewsAfter(6, true, true)).isTrue();

        LockSupport.parkNanos(java.time.Duration.ofMillis(30).toNanos());
        assertThat(shortHolds.unclaimedNewsAfter(6, true, false)).as("past the hold limit a counts as unclaimed again")
                .isTrue();
        assertThat(shortHolds.expireHeld()).as("the claim watch wakes the engine for a").isEqualTo(WakeReason.EXTERNAL);
    }

    @Test
    void aClaimThatStartedBeforeTheNewsDoesNotStandInForASecondLook() {
        namingStarted();
        wakes.claimStarted(); // under way since before a was named
        wakes.arrived(a, WakeReason.EXTERNAL, false);
        wakes.numbered(List.of(a), 7);

        assertThat(wakes.unclaimedNewsAfter(6, true, false)).isTrue();
        assertThat(wakes.holding()).isFalse();
    }

    @Test
    void aTicketForRowsAllClaimedOrHeldForASecondLookAsksForNoClaim() {
        namingStarted();
        wakes.claimEnded(wakes.claimStarted(), rows(c));
        assertThat(wakes.noNamedRowAwaitsAClaim()).isTrue();
        wakes.arrived(a, WakeReason.EXTERNAL, false);
        wakes.numbered(List.of(a), 7);
        assertThat(wakes.noNamedRowAwaitsAClaim()).as("a awaits its claim").isFalse();

        long look = wakes.secondLookStarted(6);
        assertThat(wakes.noNamedRowAwaitsAClaim()).as("a is held for the second look").isTrue();
        assertThat(wakes.claimEnded(look, rows(a))).isNull();
        assertThat(wakes.noNamedRowAwaitsAClaim()).isTrue();
    }

    @Test
    void aHeldRowPastTheHoldLimitAwaitsAClaimAgain() {
        NamedWakes quick = new NamedWakes(100, java.time.Duration.ofMillis(5));
        quick.arrived(a, WakeReason.EXTERNAL, false);
        quick.numbered(List.of(a), 7);
        quick.secondLookStarted(6);
        LockSupport.parkNanos(20_000_000);

        assertThat(quick.noNamedRowAwaitsAClaim()).as("the second look hangs: idle workers claim").isFalse();
    }

    @Test
    void aNamedRowReleasedAfterItsClaimAwaitsAClaimAgain() {
        namingStarted();
        wakes.arrived(a, WakeReason.EXTERNAL, false);
        wakes.numbered(List.of(a), 7);
        wakes.claimEnded(wakes.claimStarted(), rows(a, c));
        assertThat(wakes.noNamedRowAwaitsAClaim()).isTrue();

        wakes.released(List.of(a));

        assertThat(wakes.noNamedRowAwaitsAClaim()).as("a is due again").isFalse();
        wakes.claimEnded(wakes.claimStarted(), rows(a));
        assertThat(wakes.noNamedRowAwaitsAClaim()).isTrue();
    }
}
