package io.queuebox.testkit.outbox;

import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;

/**
 * What the claim rule of {@link OutboxStore} allows, kept beside a real store while a test drives both through the same
 * history: the rows in write order, each with its state and attempt count. It answers which rows a claim must return,
 * so the store's answer can be compared with it at every claim.
 */
final class ClaimRuleModel {

    enum State { READY, BACKOFF, PARKED, SENT, CLAIMED }

    static final class Row {
        final UUID id;
        final String aggregate;
        State state = State.READY;
        int attempts;
        /** The claimer whose open batch holds the row, while {@link State#CLAIMED}. */
        int claimer = -1;

        Row(UUID id, String aggregate) {
            this.id = id;
            this.aggregate = aggregate;
        }

        @Override
        public String toString() {
            return aggregate + ":" + state + (state == State.CLAIMED ? "@" + claimer : "") + (attempts > 0 ? "/" + attempts : "");
        }
    }

    /** In write order, which is sequence order: the test writes one transaction at a time. */
    private final Map<UUID, Row> rows = new LinkedHashMap<>();

    void written(UUID id, String aggregate) {
        rows.put(id, new Row(id, aggregate));
    }

    Row row(UUID id) {
        Row row = rows.get(id);
        if (row == null) {
            throw new IllegalArgumentException("no row " + id + " was written");
        }
        return row;
    }

    /**
     * The rows a claim of at most {@code maxRows} with per-aggregate ordering must return, in order: the first claimable
     * rows by sequence, where a row is claimable when it is ready and every earlier row of its aggregate is sent, taken
     * by the same claim, or (under {@link ParkingPolicy#CONTINUE_AGGREGATE}) parked.
     */
    List<UUID> expectedClaim(int maxRows, ParkingPolicy policy) {
        Set<String> blocked = new HashSet<>();
        List<UUID> expected = new ArrayList<>();
        for (Row row : rows.values()) {
            if (expected.size() == maxRows) {
                break;
            }
            if (blocked.contains(row.aggregate)) {
                continue;
            }
            switch (row.state) {
                case READY -> expected.add(row.id);
                case SENT -> { }
                case PARKED -> {
                    if (policy == ParkingPolicy.HOLD_AGGREGATE) {
                        blocked.add(row.aggregate);
                    }
                }
                case BACKOFF, CLAIMED -> blocked.add(row.aggregate);
            }
        }
        return expected;
    }

    /**
     * Whether the rule kept a ready row back from a claim of {@code maxRows}: one that would have been among the first
     * {@code maxRows} ready rows without ordering. With {@code byRetryOrParked}, only when a row in backoff or parked
     * (not a claimed one) did so.
     */
    boolean keptBack(int maxRows, ParkingPolicy policy, boolean byRetryOrParked) {
        Set<UUID> allowed = new HashSet<>(expectedClaim(Integer.MAX_VALUE, policy));
        Set<String> waiting = new HashSet<>();
        int ready = 0;
        for (Row row : rows.values()) {
            if (row.state == State.BACKOFF || row.state == State.PARKED && policy == ParkingPolicy.HOLD_AGGREGATE) {
                waiting.add(row.aggregate);
            }
            if (row.state != State.READY || ready++ >= maxRows) {
                continue;
            }
            if (!allowed.contains(row.id) && (!byRetryOrParked || waiting.contains(row.aggregate))) {
                return true;
            }
        }
        return false;
    }

    long count(State state) {
        return rows.values().stream().filter(r -> r.state == state).count();
    }

    /** Rows not sent: ready, in backoff, parked or claimed. */
    long unsent() {
        return rows.values().stream().filter(r -> r.state != State.SENT).count();
    }

    /** The aggregates that have a row in {@code state}, each once, in write order of their first such row. */
    List<String> aggregatesWith(State state) {
        return rows.values().stream().filter(r -> r.state == state).map(r -> r.aggregate).distinct().toList();
    }

    List<Row> parkedOf(String aggregate) {
        return rows.values().stream().filter(r -> r.state == State.PARKED && r.aggregate.equals(aggregate)).toList();
    }

    /** The unsent rows, for a failure message: aggregate, state, claimer and attempts, in write order. */
    @Override
    public String toString() {
        return rows.values().stream().filter(r -> r.state != State.SENT).map(Row::toString)
                .collect(Collectors.joining(", ", "[", "]"));
    }
}
