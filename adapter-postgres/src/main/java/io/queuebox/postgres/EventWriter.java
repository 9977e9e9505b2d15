package io.queuebox.postgres;

import io.queuebox.jdbc.Json;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxWriteException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Inserts events on the caller's connection. A batch is one statement whatever its size: every column
 * travels as one array and {@code unnest} turns the arrays back into rows, so the number of bind
 * parameters stays fixed.
 *
 * <p>The statement first takes the per-aggregate locks of the whole batch in key order, then inserts the
 * rows in list order. The schema's trigger ({@code V2__queuebox_aggregate_order.sql}) takes the same lock
 * before each row anyway; taking them all first, sorted, means two batches that write the same aggregates
 * in different list orders wait for each other instead of deadlocking.
 */
final class EventWriter {

    /**
     * The second key of an aggregate's advisory lock, as an SQL expression over {@code %t} (aggregate type)
     * and {@code %i} (aggregate id); the first key is the outbox table's oid. Must stay what the trigger of
     * {@code V2__queuebox_aggregate_order.sql} computes.
     */
    static final String AGGREGATE_LOCK_KEY = "hashtext(length(%t)::text || ':' || %t || ':' || %i)";

    private static final String UNDEFINED_TABLE = "42P01";
    private static final String UNDEFINED_SCHEMA = "3F000";

    private final PostgresOutboxSettings settings;
    private final String insert;

    EventWriter(PostgresOutboxSettings settings) {
        this.settings = settings;
        String table = settings.qualifiedTable();
        this.insert = "WITH e AS MATERIALIZED (SELECT * FROM"
                + " unnest(?::uuid[], ?::text[], ?::text[], ?::text[], ?::text[], ?::bytea[], ?::text[], ?::text[])"
                + " WITH ORDINALITY AS u(event_id, aggregate_type, aggregate_id, event_type, destination, payload,"
                + " content_type, headers, position)),"
                + " keys AS MATERIALIZED (SELECT DISTINCT " + lockKey("e") + " AS lock_key FROM e ORDER BY 1),"
                + " locked AS MATERIALIZED (SELECT count(pg_advisory_xact_lock("
                + "'" + table.replace("'", "''") + "'::regclass::oid::integer, k.lock_key)::text) AS aggregates"
                + " FROM keys k)"
                + " INSERT INTO " + table
                + " (event_id, aggregate_type, aggregate_id, event_type, destination, payload, content_type, headers)"
                + " SELECT e.event_id, e.aggregate_type, e.aggregate_id, e.event_type, e.destination, e.payload,"
                + " e.content_type, e.headers::jsonb"
                + " FROM e CROSS JOIN locked"
                + " ORDER BY e.position";
    }

    /** {@link #AGGREGATE_LOCK_KEY} over the aggregate columns of {@code alias}. */
    static String lockKey(String alias) {
        return AGGREGATE_LOCK_KEY.replace("%t", alias + ".aggregate_type").replace("%i", alias + ".aggregate_id");
    }

    void write(Connection connection, List<OutboxEvent> events) {
        Objects.requireNonNull(connection, "transaction");
        Objects.requireNonNull(events, "events");
        if (events.isEmpty()) {
            return;
        }
        int n = events.size();
        Object[] ids = new Object[n];
        String[] aggregateTypes = new String[n];
        String[] aggregateIds = new String[n];
        String[] eventTypes = new String[n];
        String[] destinations = new String[n];
        byte[][] payloads = new byte[n][];
        String[] contentTypes = new String[n];
        String[] headers = new String[n];
        for (int i = 0; i < n; i++) {
            OutboxEvent event = events.get(i);
            if (event == null) {
                throw new IllegalArgumentException("events[" + i + "] is null");
            }
            check(event);
            ids[i] = event.eventId();
            aggregateTypes[i] = event.aggregateType();
            aggregateIds[i] = event.aggregateId();
            eventTypes[i] = event.eventType();
            destinations[i] = event.destination();
            payloads[i] = event.payload();
            contentTypes[i] = event.contentType();
            headers[i] = Json.object(event.headers());
        }
        try (PreparedStatement statement = connection.prepareStatement(insert)) {
            statement.setArray(1, connection.createArrayOf("uuid", ids));
            statement.setArray(2, connection.createArrayOf("text", aggregateTypes));
            statement.setArray(3, connection.createArrayOf("text", aggregateIds));
            statement.setArray(4, connection.createArrayOf("text", eventTypes));
            statement.setArray(5, connection.createArrayOf("text", destinations));
            statement.setArray(6, connection.createArrayOf("bytea", payloads));
            statement.setArray(7, connection.createArrayOf("text", contentTypes));
            statement.setArray(8, connection.createArrayOf("text", headers));
            statement.executeUpdate();
        } catch (SQLException e) {
            throw translate(e, n);
        }
    }

    private void check(OutboxEvent event) {
        int size = event.payload().length;
        if (size > settings.maxPayloadBytes()) {
            throw new IllegalArgumentException("event " + event.eventId() + ": payload is " + size
                    + " bytes, more than outbox.maxPayloadBytes (" + settings.maxPayloadBytes() + ")");
        }
        // PostgreSQL text and jsonb cannot hold U+0000; refuse it here with a name instead of a driver error.
        noNul(event, "aggregateType", event.aggregateType());
        noNul(event, "aggregateId", event.aggregateId());
        noNul(event, "eventType", event.eventType());
        noNul(event, "contentType", event.contentType());
        if (event.destination() != null) {
            noNul(event, "destination", event.destination());
        }
        for (Map.Entry<String, String> header : event.headers().entrySet()) {
            if (header.getKey().indexOf('\0') >= 0) {
                throw new IllegalArgumentException("event " + event.eventId() + ": header name '"
                        + printable(header.getKey()) + "' contains a NUL character, which PostgreSQL cannot store");
            }
            if (header.getValue().indexOf('\0') >= 0) {
                throw new IllegalArgumentException("event " + event.eventId() + ": header '" + header.getKey()
                        + "' has a value with a NUL character, which PostgreSQL cannot store");
            }
        }
    }

    private static void noNul(OutboxEvent event, String field, String value) {
        if (value.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("event " + event.eventId() + ": " + field
                    + " contains a NUL character, which PostgreSQL cannot store");
        }
    }

    private static String printable(String value) {
        return value.replace("\0", "\\0");
    }

    private OutboxWriteException translate(SQLException e, int count) {
        String state = e.getSQLState();
        if (UNDEFINED_TABLE.equals(state) || UNDEFINED_SCHEMA.equals(state)) {
            return new OutboxWriteException("outbox table " + settings.displayName() + " does not exist: create it"
                    + " with the Flyway scripts at classpath:" + SchemaScripts.LOCATION
                    + " (placeholders queuebox_schema=" + settings.schema() + ", queuebox_table=" + settings.table()
                    + ") or with PostgresOutbox.createSchema(dataSource, settings)", e);
        }
        return new OutboxWriteException("could not insert " + count + " event(s) into " + settings.displayName()
                + " (SQL state " + state + "): " + e.getMessage(), e);
    }
}
