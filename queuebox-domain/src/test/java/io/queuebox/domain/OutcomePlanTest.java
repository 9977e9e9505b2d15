package io.queuebox.domain;

import static io.queuebox.domain.Fixtures.aDelivery;
import static io.queuebox.domain.Fixtures.order;
import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.AggregateRef;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.Park;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.ports.Reschedule;
import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class OutcomePlanTest {

    private static final AggregateRef A = order("a");
    private static final AggregateRef B = order("b");
    private static final RetryPolicy NO_JITTER = RetryPolicy.builder().jitter(0.0).maxAttempts(3).build();

    private static OutcomePlan plan(List<ClaimedDelivery> batch, List<PublishOutcome> outcomes, Ordering ordering) {
        return OutcomePlan.plan(batch, outcomes, ordering, NO_JITTER, new SplittableRandom(1));
    }

    private static PublishOutcome acked(ClaimedDelivery d) {
        return PublishOutcome.acked(d.eventId());
    }

    private static PublishOutcome retriable(ClaimedDelivery d, String reason) {
        return PublishOutcome.retriable(d.eventId(), reason);
    }

    private static UUID id(ClaimedDelivery d) {
        return d.eventId();
    }

    @Test
    void everyAckedRowIsMarkedSent() {
        List<ClaimedDelivery> batch = List.of(aDelivery(1, A), aDelivery(2, B));

        OutcomePlan plan = plan(batch, List.of(acked(batch.get(0)), acked(batch.get(1))), Ordering.PER_AGGREGATE);

        assertThat(plan.sent()).containsExactly(id(batch.get(0)), id(batch.get(1)));
        assertThat(plan.reschedules()).isEmpty();
        assertThat(plan.parks()).isEmpty();
        assertThat(plan.released()).isEmpty();
    }

    @Test
    void perAggregateTheAckedPrefixIsSentTheFirstFailureRetriedAndTheRestReleasedEvenIfAcked() {
        ClaimedDelivery a1 = aDelivery(1, A);
        ClaimedDelivery b1 = aDelivery(2, B);
        ClaimedDelivery a2 = aDelivery(3, A);
        ClaimedDelivery a3 = aDelivery(4, A);
        ClaimedDelivery b2 = aDelivery(5, B);
        ClaimedDelivery a4 = aDelivery(6, A);

        OutcomePlan plan = plan(List.of(a1, b1, a2, a3, b2, a4),
                List.of(acked(a1), acked(b1), retriable(a2, "timeout"), acked(a3), acked(b2),
                        retriable(a4, "not attempted")),
                Ordering.PER_AGGREGATE);

        assertThat(plan.sent()).containsExactly(id(a1), id(b1), id(b2));
        assertThat(plan.reschedules()).containsExactly(new Reschedule(id(a2), Duration.ofSeconds(1), "timeout"));
        assertThat(plan.released()).containsExactly(id(a3), id(a4));
        assertThat(plan.size()).isEqualTo(6);
    }

    @Test
    void aRowThatWasNeverAttemptedIsReleasedUnchargedAndHoldsBackItsAggregate() {
        ClaimedDelivery a1 = aDelivery(1, A, 2);
        ClaimedDelivery b1 = aDelivery(2, B);
        ClaimedDelivery a2 = aDelivery(3, A);

        OutcomePlan plan = plan(List.of(a1, b1, a2),
                List.of(PublishOutcome.notAttempted(a1.eventId(), "no channel"), acked(b1), acked(a2)),
                Ordering.PER_AGGREGATE);

        assertThat(plan.released()).containsExactly(id(a1), id(a2));
        assertThat(plan.sent()).containsExactly(id(b1));
        assertThat(plan.reschedules()).as("no attempt is charged, so no backoff either").isEmpty();
        assertThat(plan.parks()).as("at the attempt limit, an outage still parks nothing").isEmpty();
    }

    @Test
    void withoutOrderingARowThatWasNeverAttemptedIsReleasedAlone() {
        ClaimedDelivery a1 = aDelivery(1, A);
        ClaimedDelivery a2 = aDelivery(2, A);

        OutcomePlan plan = plan(List.of(a1, a2),
                List.of(PublishOutcome.notAttempted(a1.eventId(), "publisher stopped"), acked(a2)), Ordering.NONE);

        assertThat(plan.released()).containsExactly(id(a1));
        assertThat(plan.sent()).containsExactly(id(a2));
    }

    @Test
    void withoutOrderingEachRowStandsAlone() {
        ClaimedDelivery a1 = aDelivery(1, A);
        ClaimedDelivery a2 = aDelivery(2, A);
        ClaimedDelivery a3 = aDelivery(3, A);

        OutcomePlan plan = plan(List.of(a1, a2, a3), List.of(retriable(a1, "timeout"), acked(a2),
                PublishOutcome.permanent(a3.eventId(), "too large")), Ordering.NONE);

        assertThat(plan.sent()).containsExactly(id(a2));
        assertThat(plan.reschedules()).extracting(Reschedule::eventId).containsExactly(id(a1));
        assertThat(plan.parks()).containsExactly(new Park(id(a3), "permanent failure: too large"));
        assertThat(plan.released()).isEmpty();
    }

    @Test
    void aPermanentFailureParksAndHoldsBackTheRestOfItsAggregateInTheBatch() {
        ClaimedDelivery a1 = aDelivery(1, A);
        ClaimedDelivery a2 = aDelivery(2, A);

        OutcomePlan plan = plan(List.of(a1, a2), List.of(PublishOutcome.permanent(a1.eventId(), "no such topic"),
                acked(a2)), Ordering.PER_AGGREGATE);

        assertThat(plan.parks()).containsExactly(new Park(id(a1), "permanent failure: no such topic"));
        assertThat(plan.released()).containsExactly(id(a2));
        assertThat(plan.sent()).isEmpty();
    }

    @Test
    void aRowOutOfAttemptsIsParkedWithItsLastReason() {
        ClaimedDelivery tired = aDelivery(1, A, 2);

        OutcomePlan plan = plan(List.of(tired), List.of(retriable(tired, "broker down")), Ordering.PER_AGGREGATE);

        assertThat(plan.parks()).containsExactly(new Park(id(tired), "gave up after 3 attempts: broker down"));
    }

    @Test
    void theBackoffGrowsWithTheRowsAttempts() {
        ClaimedDelivery third = aDelivery(1, A, 1);

        OutcomePlan plan = plan(List.of(third), List.of(retriable(third, "timeout")), Ordering.PER_AGGREGATE);

        assertThat(plan.reschedules()).containsExactly(new Reschedule(id(third), Duration.ofSeconds(2), "timeout"));
    }

    @Test
    void missingOutcomesAreRetriableFailures() {
        ClaimedDelivery a1 = aDelivery(1, A);
        ClaimedDelivery b1 = aDelivery(2, B);

        OutcomePlan plan = plan(List.of(a1, b1), List.of(acked(a1)), Ordering.PER_AGGREGATE);

        assertThat(plan.sent()).containsExactly(id(a1));
        assertThat(plan.reschedules()).extracting(Reschedule::eventId, Reschedule::reason)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(id(b1), OutcomePlan.NO_OUTCOME));
    }

    @Test
    void outcomesForUnknownIdsAreIgnoredAndTheirRowsRetried() {
        ClaimedDelivery a1 = aDelivery(1, A);

        OutcomePlan plan = plan(List.of(a1), List.of(PublishOutcome.acked(UUID.randomUUID())), Ordering.NONE);

        assertThat(plan.sent()).isEmpty();
        assertThat(plan.reschedules()).extracting(Reschedule::reason).containsExactly(OutcomePlan.NO_OUTCOME);
    }

    @Test
    void aNullAnswerRetriesTheWholeBatch() {
        ClaimedDelivery a1 = aDelivery(1, A);
        ClaimedDelivery a2 = aDelivery(2, A);

        OutcomePlan plan = plan(List.of(a1, a2), null, Ordering.PER_AGGREGATE);

        assertThat(plan.reschedules()).extracting(Reschedule::eventId).containsExactly(id(a1));
        assertThat(plan.released()).containsExactly(id(a2));
    }

    @Test
    void theBatchIsPlannedInSequenceOrderWhateverItsListOrder() {
        ClaimedDelivery a1 = aDelivery(1, A);
        ClaimedDelivery a2 = aDelivery(2, A);

        OutcomePlan plan = plan(List.of(a2, a1), List.of(acked(a2), retriable(a1, "timeout")),
                Ordering.PER_AGGREGATE);

        assertThat(plan.reschedules()).extracting(Reschedule::eventId).containsExactly(id(a1));
        assertThat(plan.released()).containsExactly(id(a2));
    }

    @Test
    void anEmptyBatchPlansNothing() {
        assertThat(plan(List.of(), List.of(), Ordering.PER_AGGREGATE).size()).isZero();
    }
}
