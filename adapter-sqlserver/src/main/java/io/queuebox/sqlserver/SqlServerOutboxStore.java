package io.queuebox.sqlserver;

import io.queuebox.jdbc.Json;
import io.queuebox.jdbc.StoreArguments;
import io.queuebox.ports.BacklogStats;
import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.Park;
import io.queuebox.ports.ParkedEvent;
import io.queuebox.ports.ReplaySelector;
import io.queuebox.ports.Reschedule;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.SqlStatement;
import org.jdbi.v3.core.statement.TemplateEngine;

/**
 * Each method is one statement (the per-aggregate claim one batch with its own transaction) in one round
 * trip, on connections borrowed from the data source in autocommit, so no lock outlives a call. With
 * {@link SqlServerOutboxSettings#holdRowLocks()}, a claim is a transaction that keeps its rows' update locks, on a
 * connection of its own, until each row has its outcome ({@link HeldClaim}); its outcomes run in it.
 */
final class SqlServerOutboxStore implements OutboxStore {

    private final Jdbi jdbi;
    private final SqlServerOutboxSettings settings;
    private final StoreCalls calls;
    private final Map<LeaseToken, HeldClaim> held = new ConcurrentHashMap<>();

    SqlServerOutboxStore(Jdbi jdbi, SqlServerOutboxSettings settings) {
        this.jdbi = Objects.requireNonNull(jdbi, "jdbi");
        this.settings = Objects.requireNonNull(settings, "settings");
        this.calls = new StoreCalls(settings);
    }

    @Override
    public ClaimBatch claim(ClaimRequest request) {
        if (settings.holdRowLocks()) {
            return claimHeld(request);
        }
        LeaseToken token = LeaseToken.random();
        SqlCall call = calls.claim(request, token);
        List<ClaimedDelivery> deliveries = jdbi.withHandle(handle -> bind(plain(handle.createQuery(call.sql())), call)
                .map((rs, ctx) -> new ClaimedDelivery(rs.getLong("seq"), event(rs), rs.getInt("attempts"), token,
                        instant(rs, "created_at")))
                .list());
        // OUTPUT returns rows in no promised order.
        return new ClaimBatch(token, deliveries.stream().sorted(Comparator.comparingLong(ClaimedDelivery::sequence))
                .toList());
    }

    /**
     * A claim that holds its rows by their update locks: the leased claim's choice, in a transaction left open on
     * a connection of its own for the outcomes. Claims of this store past their deadline are ended first (the
     * timer in {@link HeldClaim} normally has).
     */
    private ClaimBatch claimHeld(ClaimRequest request) {
        held.values().removeIf(claim -> {
            if (claim.abandoned()) {
                claim.abort();
                return true;
            }
            return claim.ended();
        });
        LeaseToken token = LeaseToken.random();
        SqlCall call = calls.claimHeld(request);
        Handle handle = jdbi.open();
        try {
            handle.begin();
            List<ClaimedDelivery> deliveries = bind(plain(handle.createQuery(call.sql())), call)
                    .map((rs, ctx) -> new ClaimedDelivery(rs.getLong("seq"), event(rs), rs.getInt("attempts"), token,
                            instant(rs, "created_at")))
                    .list();
            if (deliveries.isEmpty()) {
                // Nothing to hand out; candidates the gaps step dropped may be locked: let them go.
                handle.rollback();
                handle.close();
                return ClaimBatch.empty(token);
            }
            List<ClaimedDelivery> sorted = deliveries.stream()
                    .sorted(Comparator.comparingLong(ClaimedDelivery::sequence)).toList();
            held.put(token, HeldClaim.start(settings.qualifiedTable(), handle,
                    sorted.stream().map(ClaimedDelivery::eventId).toList(), request.leaseLength()));
            return new ClaimBatch(token, sorted);
        } catch (RuntimeException | Error e) {
            try {
                handle.rollback();
            } catch (RuntimeException ignored) {
                // the failure may have taken the connection with it
            }
            try {
                handle.close();
            } catch (RuntimeException ignored) {
                // a broken connection: the pool discards it
            }
            throw e;
        }
    }

    @Override
    public int markSent(LeaseToken lease, Collection<UUID> eventIds) {
        Objects.requireNonNull(lease, "lease");
        if (eventIds.isEmpty()) {
            return 0;
        }
        if (settings.holdRowLocks()) {
            return resolveHeld(lease, eventIds, (handle, mine) -> update(handle, calls.markSentHeld(mine)));
        }
        return update(calls.markSent(lease, eventIds));
    }

    @Override
    public int reschedule(LeaseToken lease, List<Reschedule> retries) {
        Objects.requireNonNull(lease, "lease");
        if (retries.isEmpty()) {
            return 0;
        }
        if (settings.holdRowLocks()) {
            Map<UUID, Reschedule> byId = new LinkedHashMap<>();
            retries.forEach(retry -> byId.putIfAbsent(retry.eventId(), retry));
            return resolveHeld(lease, byId.keySet(), (handle, mine) ->
                    update(handle, calls.rescheduleHeld(mine.stream().map(byId::get).toList())));
        }
        return update(calls.reschedule(lease, retries));
    }

    @Override
    public int park(LeaseToken lease, List<Park> parkings) {
        Objects.requireNonNull(lease, "lease");
        if (parkings.isEmpty()) {
            return 0;
        }
        if (settings.holdRowLocks()) {
            Map<UUID, Park> byId = new LinkedHashMap<>();
            parkings.forEach(parking -> byId.putIfAbsent(parking.eventId(), parking));
            return resolveHeld(lease, byId.keySet(), (handle, mine) ->
                    update(handle, calls.parkHeld(mine.stream().map(byId::get).toList())));
        }
        return update(calls.park(lease, parkings));
    }

    @Override
    public int release(LeaseToken lease, Collection<UUID> eventIds) {
        Objects.requireNonNull(lease, "lease");
        if (eventIds.isEmpty()) {
            return 0;
        }
        if (settings.holdRowLocks()) {
            // The rows stay as they are (their locks end with the claim); the statement finds a claim whose
            // transaction SQL Server already rolled back, and the outcome restarts the deadline as any other does.
            return resolveHeld(lease, eventIds, (handle, mine) -> stillOpen(handle));
        }
        return update(calls.release(lease, eventIds));
    }

    @Override
    public int renew(LeaseToken lease, Duration leaseLength) {
        Objects.requireNonNull(lease, "lease");
        StoreArguments.leaseLength(leaseLength);
        if (settings.holdRowLocks()) {
            HeldClaim claim = held.get(lease);
            if (claim == null) {
                return 0;
            }
            int owned = claim.renew(leaseLength, () -> stillOpen(claim.handle()));
            if (claim.ended()) {
                held.remove(lease, claim);
            }
            return owned;
        }
        return update(calls.renew(lease, leaseLength));
    }

    /** An outcome for the rows of a held claim; 0 for a claim this store does not hold (any more). */
    private int resolveHeld(LeaseToken lease, Collection<UUID> eventIds, HeldWrite write) {
        HeldClaim claim = held.get(lease);
        if (claim == null) {
            return 0;
        }
        try {
            return claim.resolve(eventIds, mine -> write.apply(claim.handle(), mine));
        } finally {
            if (claim.ended()) {
                held.remove(lease, claim);
            }
        }
    }

    @FunctionalInterface
    private interface HeldWrite {
        int apply(Handle handle, List<UUID> eventIds);
    }

    /** Fails with {@link HeldClaim.TransactionGone} when SQL Server rolled the claim's transaction back. */
    private int stillOpen(Handle handle) {
        SqlCall call = calls.heldAlive();
        int open = bind(plain(handle.createQuery(call.sql())), call).mapTo(Integer.class).one();
        if (open == 0) {
            throw new HeldClaim.TransactionGone();
        }
        return open;
    }

    private static int update(Handle handle, SqlCall call) {
        return bind(plain(handle.createUpdate(call.sql())), call).execute();
    }

    /**
     * With held claims, the rows this process's held claims hold are left out (an update lock is invisible to
     * READPAST), and count with the time until their claim's deadline instead.
     */
    @Override
    public Optional<Duration> timeUntilNextDue() {
        String table = settings.qualifiedTable();
        SqlCall call = settings.holdRowLocks() ? calls.timeUntilNextDueHeld(HeldClaim.heldRows(table))
                : calls.timeUntilNextDue();
        Optional<Duration> onTable = jdbi.withHandle(handle -> bind(plain(handle.createQuery(call.sql())), call)
                .map((rs, ctx) -> {
                    long micros = rs.getLong("micros");
                    if (rs.wasNull()) {
                        return Optional.<Duration>empty();
                    }
                    return Optional.of(micros <= 0 ? Duration.ZERO : Duration.ofNanos(micros * 1000));
                })
                .one());
        if (!settings.holdRowLocks()) {
            return onTable;
        }
        Optional<Duration> heldClaims = HeldClaim.soonestDeadline(table);
        if (onTable.isEmpty()) {
            return heldClaims;
        }
        return heldClaims.filter(own -> own.compareTo(onTable.get()) < 0).or(() -> onTable);
    }

    @Override
    public int purgeSent(Duration retention, int maxRows) {
        StoreArguments.purge(retention, maxRows);
        return update(calls.purgeSent(retention, maxRows));
    }

    @Override
    public BacklogStats stats() {
        SqlCall call = calls.stats();
        return jdbi.withHandle(handle -> bind(plain(handle.createQuery(call.sql())), call)
                .map((rs, ctx) -> {
                    long oldest = rs.getLong("oldest_micros");
                    Optional<Duration> age = rs.wasNull()
                            ? Optional.empty()
                            : Optional.of(Duration.ofNanos(Math.max(0, oldest) * 1000));
                    return new BacklogStats(rs.getLong("pending"), rs.getLong("leased") + heldHere(), rs.getLong("parked"),
                            age);
                })
                .one());
    }

    /**
     * Rows held claims of this process hold (all pending, none under a live lease, so not counted twice). Those of
     * other processes cannot be told from the table without locking rows: they count as pending only.
     */
    private long heldHere() {
        return settings.holdRowLocks() ? HeldClaim.heldRows(settings.qualifiedTable()).size() : 0;
    }

    @Override
    public List<ParkedEvent> parked(ReplaySelector selector, int limit) {
        Objects.requireNonNull(selector, "selector");
        StoreArguments.atLeastOne("limit", limit);
        SqlCall call = calls.parked(selector, limit);
        return jdbi.withHandle(handle -> bind(plain(handle.createQuery(call.sql())), call)
                .map((rs, ctx) -> new ParkedEvent(rs.getLong("seq"), event(rs), rs.getInt("attempts"),
                        rs.getString("last_error"), instant(rs, "created_at")))
                .list());
    }

    @Override
    public List<ParkedEvent> parked(ReplaySelector selector, int limit, int maxPayloadBytes) {
        Objects.requireNonNull(selector, "selector");
        StoreArguments.atLeastOne("limit", limit);
        ParkedEvent.requirePayloadCap(maxPayloadBytes);
        SqlCall call = calls.parked(selector, limit, maxPayloadBytes);
        return jdbi.withHandle(handle -> bind(plain(handle.createQuery(call.sql())), call)
                .map((rs, ctx) -> new ParkedEvent(rs.getLong("seq"), event(rs), rs.getInt("attempts"),
                        rs.getString("last_error"), instant(rs, "created_at"), rs.getInt("payload_bytes")))
                .list());
    }

    @Override
    public int replay(ReplaySelector selector) {
        Objects.requireNonNull(selector, "selector");
        return update(calls.replay(selector));
    }

    private int update(SqlCall call) {
        return jdbi.withHandle(handle -> bind(plain(handle.createUpdate(call.sql())), call).execute());
    }

    static <S extends SqlStatement<S>> S bind(S statement, SqlCall call) {
        for (Map.Entry<String, Object> parameter : call.parameters().entrySet()) {
            Object value = parameter.getValue();
            if (value == null) {
                statement.bindNull(parameter.getKey(), Types.NVARCHAR);
            } else if (value instanceof String text) {
                statement.bind(parameter.getKey(), text);
            } else if (value instanceof Integer number) {
                statement.bind(parameter.getKey(), number.intValue());
            } else if (value instanceof Long number) {
                statement.bind(parameter.getKey(), number.longValue());
            } else if (value instanceof Boolean flag) {
                statement.bind(parameter.getKey(), flag.booleanValue());
            } else {
                throw new IllegalArgumentException("unsupported parameter type for " + parameter.getKey() + ": "
                        + value.getClass().getName());
            }
        }
        return statement;
    }

    // The statements are complete SQL; Jdbi's template engine would only misread '<' comparisons.
    static <S extends SqlStatement<S>> S plain(S statement) {
        return statement.setTemplateEngine(TemplateEngine.NOP);
    }

    private static OutboxEvent event(ResultSet rs) throws SQLException {
        return new OutboxEvent(UUID.fromString(rs.getString("event_id")), rs.getString("aggregate_type"),
                rs.getString("aggregate_id"), rs.getString("event_type"), rs.getString("destination"),
                rs.getBytes("payload"), rs.getString("content_type"), Json.parseObject(rs.getString("headers")));
    }

    /** datetime2 columns hold UTC; reading them as Timestamp would apply the JVM's time zone. */
    static Instant instant(ResultSet rs, String column) throws SQLException {
        LocalDateTime value = rs.getObject(column, LocalDateTime.class);
        return value == null ? null : value.toInstant(ZoneOffset.UTC);
    }

    @Override
    public String toString() {
        return "SqlServerOutboxStore[" + settings.displayName() + "]";
    }
}
