package io.queuebox.sqlserver;

import io.queuebox.jdbc.Json;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.Park;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.ports.ReplaySelector;
import io.queuebox.ports.Reschedule;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Turns each store operation into its statement and parameters, without touching the database. */
final class StoreCalls {

    /** DATEADD takes an int: durations are capped at about 68 years, far beyond any lease, delay or retention. */
    static final long MAX_SECONDS = Integer.MAX_VALUE;

    private final SqlServerOutboxSettings settings;

    StoreCalls(SqlServerOutboxSettings settings) {
        this.settings = settings;
    }

    SqlCall claim(ClaimRequest request, LeaseToken token) {
        boolean ordered = request.ordering() == Ordering.PER_AGGREGATE;
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("maxRows", request.maxRows());
        p.put("owner", request.owner());
        p.put("token", token.value().toString());
        p.put("leaseSeconds", seconds(request.leaseLength()));
        p.put("leaseMicros", microsOfSecond(request.leaseLength()));
        if (ordered) {
            p.put("parkedHolds", request.parkingPolicy() == ParkingPolicy.HOLD_AGGREGATE);
        }
        return call(ordered ? SqlServerStatements.CLAIM_ORDERED : SqlServerStatements.CLAIM_UNORDERED, p);
    }

    /** The claim of {@code outbox.holdRowLocks}: no owner, token or lease length, since it writes nothing. */
    SqlCall claimHeld(ClaimRequest request) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("maxRows", request.maxRows());
        if (request.ordering() == Ordering.PER_AGGREGATE) {
            p.put("parkedHolds", request.parkingPolicy() == ParkingPolicy.HOLD_AGGREGATE);
            return call(SqlServerStatements.CLAIM_ORDERED_HELD, p);
        }
        return call(SqlServerStatements.CLAIM_UNORDERED_HELD, p);
    }

    SqlCall markSentHeld(Collection<?> eventIds) {
        return call(settings.deleteOnSend() ? SqlServerStatements.DELETE_SENT_HELD : SqlServerStatements.MARK_SENT_HELD,
                Map.of("ids", Json.array(eventIds)));
    }

    SqlCall rescheduleHeld(List<Reschedule> retries) {
        return call(SqlServerStatements.RESCHEDULE_HELD, Map.of("retries", Json.records(retryRows(retries))));
    }

    SqlCall parkHeld(List<Park> parkings) {
        return call(SqlServerStatements.PARK_HELD, Map.of("parkings", Json.records(parkRows(parkings))));
    }

    SqlCall heldAlive() {
        return call(SqlServerStatements.HELD_ALIVE, Map.of());
    }

    /** {@link #timeUntilNextDue()} without the rows that held claims of this process hold. */
    SqlCall timeUntilNextDueHeld(Collection<?> heldIds) {
        return call(SqlServerStatements.TIME_UNTIL_NEXT_DUE_HELD, Map.of("held", Json.array(heldIds)));
    }

    SqlCall markSent(LeaseToken lease, Collection<?> eventIds) {
        return call(settings.deleteOnSend() ? SqlServerStatements.DELETE_SENT : SqlServerStatements.MARK_SENT,
                Map.of("token", lease.value().toString(), "ids", Json.array(eventIds)));
    }

    SqlCall reschedule(LeaseToken lease, List<Reschedule> retries) {
        return call(SqlServerStatements.RESCHEDULE,
                Map.of("token", lease.value().toString(), "retries", Json.records(retryRows(retries))));
    }

    SqlCall park(LeaseToken lease, List<Park> parkings) {
        return call(SqlServerStatements.PARK,
                Map.of("token", lease.value().toString(), "parkings", Json.records(parkRows(parkings))));
    }

    private static List<Map<String, Object>> retryRows(List<Reschedule> retries) {
        List<Map<String, Object>> rows = new ArrayList<>();
        for (Reschedule retry : retries) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("id", retry.eventId().toString());
            row.put("seconds", seconds(retry.delay()));
            row.put("micros", microsOfSecond(retry.delay()));
            row.put("reason", retry.reason());
            rows.add(row);
        }
        return rows;
    }

    private static List<Map<String, Object>> parkRows(List<Park> parkings) {
        List<Map<String, Object>> rows = new ArrayList<>();
        for (Park parking : parkings) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("id", parking.eventId().toString());
            row.put("reason", parking.reason());
            rows.add(row);
        }
        return rows;
    }

    SqlCall release(LeaseToken lease, Collection<?> eventIds) {
        return call(SqlServerStatements.RELEASE, Map.of("token", lease.value().toString(), "ids", Json.array(eventIds)));
    }

    SqlCall renew(LeaseToken lease, Duration leaseLength) {
        return call(SqlServerStatements.RENEW, Map.of("token", lease.value().toString(),
                "leaseSeconds", seconds(leaseLength), "leaseMicros", microsOfSecond(leaseLength)));
    }

    SqlCall timeUntilNextDue() {
        return call(SqlServerStatements.TIME_UNTIL_NEXT_DUE, Map.of());
    }

    SqlCall purgeSent(Duration retention, int maxRows) {
        return call(SqlServerStatements.PURGE_SENT, Map.of("maxRows", maxRows,
                "retentionSeconds", seconds(retention), "retentionMicros", microsOfSecond(retention)));
    }

    SqlCall stats() {
        return call(SqlServerStatements.STATS, Map.of());
    }

    SqlCall parked(ReplaySelector selector, int limit) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("limit", limit);
        return parked(selector, p, SqlServerStatements.PARKED_BY_EVENT_IDS, SqlServerStatements.PARKED_BY_AGGREGATE,
                SqlServerStatements.PARKED_ALL);
    }

    SqlCall parked(ReplaySelector selector, int limit, int maxPayloadBytes) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("limit", limit);
        p.put("maxPayloadBytes", maxPayloadBytes);
        return parked(selector, p, SqlServerStatements.PARKED_CAPPED_BY_EVENT_IDS,
                SqlServerStatements.PARKED_CAPPED_BY_AGGREGATE, SqlServerStatements.PARKED_CAPPED_ALL);
    }

    /** The statement of the selector's kind, with the selector's parameters added to {@code p}. */
    private SqlCall parked(ReplaySelector selector, Map<String, Object> p, SqlServerStatements forEventIds,
                           SqlServerStatements forAggregate, SqlServerStatements forAll) {
        if (selector instanceof ReplaySelector.ByEventIds byIds) {
            p.put("ids", Json.array(byIds.eventIds()));
            return call(forEventIds, p);
        }
        if (selector instanceof ReplaySelector.ByAggregate byAggregate) {
            p.put("aggregateType", byAggregate.aggregate().type());
            p.put("aggregateId", byAggregate.aggregate().id());
            return call(forAggregate, p);
        }
        return call(forAll, p);
    }

    SqlCall replay(ReplaySelector selector) {
        if (selector instanceof ReplaySelector.ByEventIds byIds) {
            return call(SqlServerStatements.REPLAY_BY_EVENT_IDS, Map.of("ids", Json.array(byIds.eventIds())));
        }
        if (selector instanceof ReplaySelector.ByAggregate byAggregate) {
            return call(SqlServerStatements.REPLAY_BY_AGGREGATE, Map.of("aggregateType",
                    byAggregate.aggregate().type(), "aggregateId", byAggregate.aggregate().id()));
        }
        return call(SqlServerStatements.REPLAY_ALL, Map.of());
    }

    private SqlCall call(SqlServerStatements statement, Map<String, Object> parameters) {
        return new SqlCall(statement, statement.render(settings), parameters);
    }

    static int seconds(Duration duration) {
        return (int) Math.min(duration.getSeconds(), MAX_SECONDS);
    }

    static int microsOfSecond(Duration duration) {
        return duration.getSeconds() >= MAX_SECONDS ? 0 : duration.getNano() / 1000;
    }
}
