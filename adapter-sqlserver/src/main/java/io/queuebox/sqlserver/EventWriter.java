package io.queuebox.sqlserver;

import io.queuebox.jdbc.Json;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxWriteException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.util.List;
import java.util.Objects;

/**
 * Inserts events on the caller's connection as multi-row inserts. SQL Server takes at most 2100 parameters
 * per statement and 1000 rows per VALUES list; with eight parameters per row a statement carries
 * {@value #ROWS_PER_STATEMENT} rows, so a batch of n events is ceil(n / {@value #ROWS_PER_STATEMENT})
 * statements.
 */
final class EventWriter {

    static final int PARAMETERS_PER_ROW = 8;
    static final int MAX_PARAMETERS = 2100;
    static final int ROWS_PER_STATEMENT = MAX_PARAMETERS / PARAMETERS_PER_ROW;
    /** The nvarchar(255) columns. */
    static final int MAX_NAME_LENGTH = 255;

    private static final int INVALID_OBJECT_NAME = 208;

    private final SqlServerOutboxSettings settings;
    private final String template;

    EventWriter(SqlServerOutboxSettings settings) {
        this.settings = settings;
        this.template = SqlServerStatements.INSERT_EVENTS.render(settings);
    }

    /** The insert for {@code rows} rows: the template with that many parameter groups. */
    String insertFor(int rows) {
        StringBuilder values = new StringBuilder();
        for (int i = 0; i < rows; i++) {
            if (i > 0) {
                values.append(", ");
            }
            values.append("(CAST(? AS uniqueidentifier), ?, ?, ?, ?, ?, ?, ?, ").append(i).append(')');
        }
        return template.replace("{rows}", values);
    }

    void write(Connection connection, List<OutboxEvent> events) {
        Objects.requireNonNull(connection, "transaction");
        validate(events);
        int written = 0;
        try {
            for (int from = 0; from < events.size(); from += ROWS_PER_STATEMENT) {
                List<OutboxEvent> chunk = events.subList(from, Math.min(events.size(), from + ROWS_PER_STATEMENT));
                try (PreparedStatement statement = connection.prepareStatement(insertFor(chunk.size()))) {
                    int p = 1;
                    for (OutboxEvent event : chunk) {
                        statement.setString(p++, event.eventId().toString());
                        statement.setString(p++, event.aggregateType());
                        statement.setString(p++, event.aggregateId());
                        statement.setString(p++, event.eventType());
                        if (event.destination() == null) {
                            statement.setNull(p++, Types.NVARCHAR);
                        } else {
                            statement.setString(p++, event.destination());
                        }
                        statement.setBytes(p++, event.payload());
                        statement.setString(p++, event.contentType());
                        statement.setString(p++, Json.object(event.headers()));
                    }
                    statement.executeUpdate();
                }
                written += chunk.size();
            }
        } catch (SQLException e) {
            throw translate(e, events.size(), written);
        }
    }

    /** Refuses a bad batch before anything reaches the database, naming the event and the field. */
    void validate(List<OutboxEvent> events) {
        Objects.requireNonNull(events, "events");
        for (int i = 0; i < events.size(); i++) {
            OutboxEvent event = events.get(i);
            if (event == null) {
                throw new IllegalArgumentException("events[" + i + "] is null");
            }
            check(event);
        }
    }

    private void check(OutboxEvent event) {
        int size = event.payload().length;
        if (size > settings.maxPayloadBytes()) {
            throw new IllegalArgumentException("event " + event.eventId() + ": payload is " + size
                    + " bytes, more than outbox.maxPayloadBytes (" + settings.maxPayloadBytes() + ")");
        }
        fits(event, "aggregateType", event.aggregateType());
        fits(event, "aggregateId", event.aggregateId());
        fits(event, "eventType", event.eventType());
        fits(event, "contentType", event.contentType());
        if (event.destination() != null) {
            fits(event, "destination", event.destination());
        }
    }

    // Refused here with a name, rather than as SQL Server's "String or binary data would be truncated".
    private static void fits(OutboxEvent event, String field, String value) {
        if (value.length() > MAX_NAME_LENGTH) {
            throw new IllegalArgumentException("event " + event.eventId() + ": " + field + " is " + value.length()
                    + " characters, more than the " + MAX_NAME_LENGTH + " the SQL Server outbox column holds");
        }
    }

    private OutboxWriteException translate(SQLException e, int count, int written) {
        if (e.getErrorCode() == INVALID_OBJECT_NAME) {
            return new OutboxWriteException("outbox table " + settings.displayName() + " does not exist: create it"
                    + " with the Flyway scripts at classpath:" + SchemaScripts.LOCATION
                    + " (placeholders queuebox_schema=" + settings.schema() + ", queuebox_table=" + settings.table()
                    + ") or with SqlServerOutbox.createSchema(dataSource, settings)", e);
        }
        return new OutboxWriteException("could not insert " + count + " event(s) into " + settings.displayName()
                + " (SQL state " + e.getSQLState() + ", error " + e.getErrorCode() + ", " + written
                + " inserted before the failure, in the caller's transaction): " + e.getMessage(), e);
    }
}
