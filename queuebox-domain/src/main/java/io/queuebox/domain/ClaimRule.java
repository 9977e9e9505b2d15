package io.queuebox.domain;

import io.queuebox.ports.AggregateRef;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.ParkingPolicy;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The claim rule, stated once and executable. A row may be claimed when it is pending, due, not under a
 * live lease, and, with {@link Ordering#PER_AGGREGATE}, every earlier row of its aggregate is sent, or
 * claimed in the same batch, or parked under {@link ParkingPolicy#CONTINUE_AGGREGATE}.
 *
 * <p>The in-memory store applies this function directly; SQL stores express the same rule in SQL and the
 * store contract checks that they agree.
 */
public final class ClaimRule {

    private ClaimRule() {
    }

    /**
     * The sequences of the rows a claim takes, in ascending order.
     *
     * @param rows    every row the store holds (any order; sent rows may be left out)
     * @param now     the store's clock
     * @param request batch size, ordering and parking policy
     */
    public static List<Long> select(Collection<RowState> rows, Instant now, ClaimRequest request) {
        List<RowState> inOrder = new ArrayList<>(rows);
        inOrder.sort(Comparator.comparingLong(RowState::sequence));
        boolean ordered = request.ordering() == Ordering.PER_AGGREGATE;
        boolean parkedHolds = request.parkingPolicy() == ParkingPolicy.HOLD_AGGREGATE;
        Set<AggregateRef> blocked = new HashSet<>();
        List<Long> selected = new ArrayList<>();
        for (RowState row : inOrder) {
            if (selected.size() == request.maxRows()) {
                break;
            }
            switch (row.status()) {
                case SENT -> { }
                case PARKED -> {
                    if (ordered && parkedHolds) {
                        blocked.add(row.aggregate());
                    }
                }
                case PENDING -> {
                    if (ordered && blocked.contains(row.aggregate())) {
                        continue;
                    }
                    if (row.isClaimableAlone(now)) {
                        selected.add(row.sequence());
                    } else if (ordered) {
                        // An earlier row that is leased elsewhere or not due yet holds back its aggregate.
                        blocked.add(row.aggregate());
                    }
                }
            }
        }
        return selected;
    }

    /**
     * Whether a claim that took {@code selected} holds back an unsent row of one of its aggregates: a later row of
     * such an aggregate outside the batch, which its outcome may make claimable (ClaimBatch holdsBack). Only for an
     * ordered batch short of the batch size: after a full one the engine claims again anyway.
     */
    public static boolean holdsBack(Collection<RowState> rows, List<Long> selected, ClaimRequest request) {
        if (request.ordering() != Ordering.PER_AGGREGATE || selected.isEmpty() || selected.size() >= request.maxRows()) {
            return false;
        }
        Set<Long> taken = new HashSet<>(selected);
        Map<AggregateRef, Long> lastTaken = new HashMap<>();
        for (RowState row : rows) {
            if (taken.contains(row.sequence())) {
                lastTaken.merge(row.aggregate(), row.sequence(), Math::max);
            }
        }
        for (RowState row : rows) {
            Long last = lastTaken.get(row.aggregate());
            if (last != null && row.status() != RowStatus.SENT && row.sequence() > last && !taken.contains(row.sequence())) {
                return true;
            }
        }
        return false;
    }

    /**
     * Whether a claim that took {@code selected} took nothing although rows were due while others were in flight
     * (ClaimBatch heldElsewhere): each due row held back by an earlier row of its aggregate. Only for an ordered,
     * empty claim; due rows held back by a parked head or one in backoff, with nothing under a live lease, do not
     * count (nobody's claim ends that).
     */
    public static boolean heldElsewhere(Collection<RowState> rows, Instant now, List<Long> selected,
                                        ClaimRequest request) {
        if (request.ordering() != Ordering.PER_AGGREGATE || !selected.isEmpty()) {
            return false;
        }
        boolean due = false;
        boolean inFlight = false;
        for (RowState row : rows) {
            due |= row.isClaimableAlone(now);
            inFlight |= row.status() == RowStatus.PENDING && row.hasLiveLease(now);
        }
        return due && inFlight;
    }
}
