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
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.SqlStatement;
import org.jdbi.v3.core.statement.TemplateEngine;

/**
 * Each method is one statement (the per-aggregate claim one batch with its own transaction) in one round
 * trip, on connections borrowed from the data source in autocommit, so no lock outlives a call.
 */
final class SqlServerOutboxStore implements OutboxStore {

    private final Jdbi jdbi;
    private final SqlServerOutboxSettings settings;
    private final StoreCalls calls;

    SqlServerOutboxStore(Jdbi jdbi, SqlServerOutboxSettings settings) {
        this.jdbi = Objects.requireNonNull(jdbi, "jdbi");
        this.settings = Objects.requireNonNull(settings, "settings");
        this.calls = new StoreCalls(settings);
    }

    @Override
    public ClaimBatch claim(ClaimRequest request) {
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

    @Override
    public int markSent(LeaseToken lease, Collection<UUID> eventIds) {
        Objects.requireNonNull(lease, "lease");
        return eventIds.isEmpty() ? 0 : update(calls.markSent(lease, eventIds));
    }

    @Override
    public int reschedule(LeaseToken lease, List<Reschedule> retries) {
        Objects.requireNonNull(lease, "lease");
        return retries.isEmpty() ? 0 : update(calls.reschedule(lease, retries));
    }

    @Override
    public int park(LeaseToken lease, List<Park> parkings) {
        Objects.requireNonNull(lease, "lease");
        return parkings.isEmpty() ? 0 : update(calls.park(lease, parkings));
    }

    @Override
    public int release(LeaseToken lease, Collection<UUID> eventIds) {
        Objects.requireNonNull(lease, "lease");
        return eventIds.isEmpty() ? 0 : update(calls.release(lease, eventIds));
    }

    @Override
    public int renew(LeaseToken lease, Duration leaseLength) {
        Objects.requireNonNull(lease, "lease");
        StoreArguments.leaseLength(leaseLength);
        return update(calls.renew(lease, leaseLength));
    }

    @Override
    public Optional<Duration> timeUntilNextDue() {
        SqlCall call = calls.timeUntilNextDue();
        return jdbi.withHandle(handle -> bind(plain(handle.createQuery(call.sql())), call)
                .map((rs, ctx) -> {
                    long micros = rs.getLong("micros");
                    if (rs.wasNull()) {
                        return Optional.<Duration>empty();
                    }
                    return Optional.of(micros <= 0 ? Duration.ZERO : Duration.ofNanos(micros * 1000));
                })
                .one());
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
                    return new BacklogStats(rs.getLong("pending"), rs.getLong("leased"), rs.getLong("parked"), age);
                })
                .one());
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
