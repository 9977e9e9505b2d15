package io.queuebox.domain;

import static io.queuebox.domain.Fixtures.T0;
import static io.queuebox.domain.Fixtures.order;
import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.AggregateRef;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.ParkingPolicy;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class ClaimRuleTest {

    private static final AggregateRef A = order("a");
    private static final AggregateRef B = order("b");

    private static ClaimRequest request(int maxRows, Ordering ordering, ParkingPolicy parking) {
        return new ClaimRequest("test", maxRows, Duration.ofSeconds(30), ordering, parking);
    }

    private static ClaimRequest ordered() {
        return request(100, Ordering.PER_AGGREGATE, ParkingPolicy.HOLD_AGGREGATE);
    }

    private static RowState aPendingDueRow(long sequence, AggregateRef aggregate) {
        return new RowState(sequence, aggregate, RowStatus.PENDING, T0.minusSeconds(1), null);
    }

    private static RowState aPendingRowDueIn(long sequence, AggregateRef aggregate, Duration in) {
        return new RowState(sequence, aggregate, RowStatus.PENDING, T0.plus(in), null);
    }

    private static RowState aRowLeasedFor(long sequence, AggregateRef aggregate, Duration remaining) {
        return new RowState(sequence, aggregate, RowStatus.PENDING, T0.minusSeconds(1), T0.plus(remaining));
    }

    private static RowState aRow(long sequence, AggregateRef aggregate, RowStatus status) {
        return new RowState(sequence, aggregate, status, T0.minusSeconds(1), null);
    }

    @Test
    void takesDueRowsInSequenceOrderWhateverTheInputOrder() {
        List<RowState> rows = List.of(aPendingDueRow(3, A), aPendingDueRow(1, B), aPendingDueRow(2, A));

        assertThat(ClaimRule.select(rows, T0, ordered())).containsExactly(1L, 2L, 3L);
    }

    @Test
    void skipsSentAndParkedRowsAndRowsNotDue() {
        List<RowState> rows = List.of(aRow(1, A, RowStatus.SENT), aRow(2, B, RowStatus.PARKED),
                aPendingRowDueIn(3, order("c"), Duration.ofSeconds(5)), aPendingDueRow(4, order("d")));

        assertThat(ClaimRule.select(rows, T0, ordered())).containsExactly(4L);
    }

    @Test
    void aRowDueExactlyNowIsClaimable() {
        assertThat(ClaimRule.select(List.of(aPendingRowDueIn(1, A, Duration.ZERO)), T0, ordered()))
                .containsExactly(1L);
    }

    @Test
    void aRowWhoseLeaseExpiredIsClaimableAgain() {
        RowState expired = new RowState(1, A, RowStatus.PENDING, T0.minusSeconds(60), T0.minusMillis(1));

        assertThat(ClaimRule.select(List.of(expired), T0, ordered())).containsExactly(1L);
    }

    @Test
    void withOrderingALeasedEarlierRowBlocksItsAggregateOnly() {
        List<RowState> rows = List.of(aRowLeasedFor(1, A, Duration.ofSeconds(10)), aPendingDueRow(2, A),
                aPendingDueRow(3, B));

        assertThat(ClaimRule.select(rows, T0, ordered())).containsExactly(3L);
    }

    @Test
    void withOrderingAnEarlierRowNotYetDueBlocksItsAggregate() {
        List<RowState> rows = List.of(aPendingRowDueIn(1, A, Duration.ofSeconds(5)), aPendingDueRow(2, A),
                aPendingDueRow(3, B));

        assertThat(ClaimRule.select(rows, T0, ordered())).containsExactly(3L);
    }

    @Test
    void withoutOrderingLaterRowsOvertakeLeasedAndNotDueOnes() {
        List<RowState> rows = List.of(aRowLeasedFor(1, A, Duration.ofSeconds(10)), aPendingDueRow(2, A),
                aPendingRowDueIn(3, B, Duration.ofSeconds(5)), aPendingDueRow(4, B));

        assertThat(ClaimRule.select(rows, T0, request(100, Ordering.NONE, ParkingPolicy.HOLD_AGGREGATE)))
                .containsExactly(2L, 4L);
    }

    @Test
    void aParkedRowHoldsItsAggregateUnderHoldAggregate() {
        List<RowState> rows = List.of(aRow(1, A, RowStatus.PARKED), aPendingDueRow(2, A), aPendingDueRow(3, B));

        assertThat(ClaimRule.select(rows, T0, request(100, Ordering.PER_AGGREGATE, ParkingPolicy.HOLD_AGGREGATE)))
                .containsExactly(3L);
    }

    @Test
    void aParkedRowHoldsNothingUnderContinueAggregate() {
        List<RowState> rows = List.of(aRow(1, A, RowStatus.PARKED), aPendingDueRow(2, A), aPendingDueRow(3, B));

        assertThat(ClaimRule.select(rows, T0,
                request(100, Ordering.PER_AGGREGATE, ParkingPolicy.CONTINUE_AGGREGATE)))
                .containsExactly(2L, 3L);
    }

    @Test
    void aParkedRowHoldsNothingWithoutOrdering() {
        List<RowState> rows = List.of(aRow(1, A, RowStatus.PARKED), aPendingDueRow(2, A));

        assertThat(ClaimRule.select(rows, T0, request(100, Ordering.NONE, ParkingPolicy.HOLD_AGGREGATE)))
                .containsExactly(2L);
    }

    @Test
    void earlierRowsOfTheAggregateClaimedInTheSameBatchDoNotBlock() {
        List<RowState> rows = List.of(aRow(1, A, RowStatus.SENT), aPendingDueRow(2, A), aPendingDueRow(3, A));

        assertThat(ClaimRule.select(rows, T0, ordered())).containsExactly(2L, 3L);
    }

    @Test
    void takesAtMostTheBatchSizeInSequenceOrder() {
        List<RowState> rows = List.of(aPendingDueRow(5, A), aPendingDueRow(4, B), aPendingDueRow(3, A),
                aPendingDueRow(2, B), aPendingDueRow(1, A));

        assertThat(ClaimRule.select(rows, T0, request(2, Ordering.PER_AGGREGATE, ParkingPolicy.HOLD_AGGREGATE)))
                .containsExactly(1L, 2L);
    }

    @Test
    void theBatchLimitLeavesTheRestOfAnAggregateForTheNextClaim() {
        List<RowState> rows = List.of(aPendingDueRow(1, A), aPendingDueRow(2, A), aPendingDueRow(3, A));

        assertThat(ClaimRule.select(rows, T0, request(1, Ordering.PER_AGGREGATE, ParkingPolicy.HOLD_AGGREGATE)))
                .containsExactly(1L);
    }

    @Test
    void nothingClaimableGivesAnEmptyList() {
        assertThat(ClaimRule.select(List.of(), T0, ordered())).isEmpty();
    }

    // ------------------------------------------------------------------ holds back

    @Test
    void aPartialOrderedBatchWithALaterUnsentRowOfItsAggregateOutsideItHoldsItBack() {
        List<RowState> rows = List.of(aPendingDueRow(1, A), aPendingRowDueIn(2, A, Duration.ofSeconds(5)),
                aPendingDueRow(3, B));
        List<Long> selected = ClaimRule.select(rows, T0, ordered());

        assertThat(selected).containsExactly(1L, 3L);
        assertThat(ClaimRule.holdsBack(rows, selected, ordered())).isTrue();
    }

    @Test
    void aBatchHoldsNothingBackWhenItTookEveryUnsentRowOfItsAggregatesOrIsFullOrUnordered() {
        List<RowState> all = List.of(aPendingDueRow(1, A), aPendingDueRow(2, A), aRow(3, B, RowStatus.SENT),
                aPendingDueRow(4, B));
        assertThat(ClaimRule.holdsBack(all, List.of(1L, 2L, 4L), ordered())).isFalse();

        List<RowState> behind = List.of(aPendingDueRow(1, A), aPendingRowDueIn(2, A, Duration.ofSeconds(5)));
        assertThat(ClaimRule.holdsBack(behind, List.of(1L), request(1, Ordering.PER_AGGREGATE,
                ParkingPolicy.HOLD_AGGREGATE))).as("a full batch").isFalse();
        assertThat(ClaimRule.holdsBack(behind, List.of(1L), request(100, Ordering.NONE,
                ParkingPolicy.HOLD_AGGREGATE))).as("unordered").isFalse();
        assertThat(ClaimRule.holdsBack(behind, List.of(), ordered())).as("an empty batch").isFalse();
    }
}
