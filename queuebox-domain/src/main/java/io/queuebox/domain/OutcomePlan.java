package io.queuebox.domain;

import io.queuebox.ports.AggregateRef;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.Park;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.ports.Reschedule;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.random.RandomGenerator;

/**
 * What to write to the store after one batch was published: which rows are sent, which go back with a
 * delay, which are parked and which are released unchanged.
 *
 * <p>With {@link Ordering#PER_AGGREGATE}, per aggregate in sequence order: the acked prefix is marked
 * sent; the first failure is rescheduled or parked as the {@link RetryPolicy} decides; every later row
 * of that aggregate is released, even if the publisher acked it (it will be delivered again, which
 * at-least-once allows), so a retry never overtakes a later event. With {@link Ordering#NONE} each row
 * stands alone.
 *
 * <p>A row answered {@link PublishOutcome.NotAttempted} never reached the broker: it is released, not
 * charged an attempt, and (with per-aggregate ordering) holds back the later rows of its aggregate like a
 * failure does.
 *
 * <p>Outcomes are matched to deliveries by event id. A delivery without an outcome (the publisher
 * returned too few, or outcomes for unknown ids) counts as a retriable failure
 * {@value #NO_OUTCOME}.
 *
 * @param sent        rows to mark sent, in sequence order
 * @param reschedules rows to return to pending with a delay
 * @param parks       rows to park
 * @param released    rows to give back unchanged (not counted as an attempt)
 */
public record OutcomePlan(List<UUID> sent, List<Reschedule> reschedules, List<Park> parks, List<UUID> released) {

    /** The reason recorded for a delivery the publisher gave no outcome for. */
    public static final String NO_OUTCOME = "publisher returned no outcome";

    public OutcomePlan {
        sent = List.copyOf(sent);
        reschedules = List.copyOf(reschedules);
        parks = List.copyOf(parks);
        released = List.copyOf(released);
    }

    /**
     * Plans the writes for one published batch.
     *
     * @param batch    the claimed deliveries (any order; planned in ascending sequence)
     * @param outcomes what the publisher answered, one per delivery; may be short, long or {@code null}
     * @param ordering whether failures hold back later rows of their aggregate
     * @param policy   decides between retry and park
     * @param random   the source of the policy's jitter
     */
    public static OutcomePlan plan(List<ClaimedDelivery> batch, List<PublishOutcome> outcomes, Ordering ordering,
                                   RetryPolicy policy, RandomGenerator random) {
        Objects.requireNonNull(batch, "batch");
        Objects.requireNonNull(ordering, "ordering");
        Objects.requireNonNull(policy, "policy");
        Objects.requireNonNull(random, "random");
        Map<UUID, PublishOutcome> byId = new HashMap<>();
        if (outcomes != null) {
            for (PublishOutcome outcome : outcomes) {
                if (outcome != null) {
                    byId.putIfAbsent(outcome.eventId(), outcome);
                }
            }
        }
        List<ClaimedDelivery> inOrder = new ArrayList<>(batch);
        inOrder.sort(Comparator.comparingLong(ClaimedDelivery::sequence));

        List<UUID> sent = new ArrayList<>();
        List<Reschedule> reschedules = new ArrayList<>();
        List<Park> parks = new ArrayList<>();
        List<UUID> released = new ArrayList<>();
        Set<AggregateRef> failed = new HashSet<>();
        boolean ordered = ordering == Ordering.PER_AGGREGATE;
        for (ClaimedDelivery delivery : inOrder) {
            if (ordered && failed.contains(delivery.aggregate())) {
                released.add(delivery.eventId());
                continue;
            }
            PublishOutcome outcome = byId.getOrDefault(delivery.eventId(),
                    PublishOutcome.retriable(delivery.eventId(), NO_OUTCOME));
            if (outcome.isAcked()) {
                sent.add(delivery.eventId());
                continue;
            }
            failed.add(delivery.aggregate());
            if (outcome instanceof PublishOutcome.NotAttempted) {
                released.add(delivery.eventId());
                continue;
            }
            boolean permanent = outcome instanceof PublishOutcome.PermanentFailure;
            RetryPolicy.Decision decision = policy.decide(delivery.attempts() + 1, permanent, reasonOf(outcome),
                    random);
            if (decision instanceof RetryPolicy.Decision.Retry retry) {
                reschedules.add(new Reschedule(delivery.eventId(), retry.delay(), retry.reason()));
            } else {
                parks.add(new Park(delivery.eventId(), ((RetryPolicy.Decision.Park) decision).reason()));
            }
        }
        return new OutcomePlan(sent, reschedules, parks, released);
    }

    /** How many rows the plan writes: the batch size. */
    public int size() {
        return sent.size() + reschedules.size() + parks.size() + released.size();
    }

    private static String reasonOf(PublishOutcome outcome) {
        if (outcome instanceof PublishOutcome.RetriableFailure retriable) {
            return retriable.reason();
        }
        return ((PublishOutcome.PermanentFailure) outcome).reason();
    }
}
