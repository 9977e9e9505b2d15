package io.queuebox.bootstrap.console;

import io.queuebox.ports.OutboxEvent;
import io.queuebox.postgres.PostgresOutbox;
import io.queuebox.postgres.PostgresOutboxSettings;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/** Events for the console's tests: written through the real writer, parked the way the CLI tests park them. */
public final class ConsoleFixtures {

    /** A payload that runs script if any page renders it as markup. */
    public static final String MALICIOUS_PAYLOAD =
            "{\"note\":\"<img src=x onerror=\\\"window.__xss='img'\\\"><script>window.__xss='script'</script>\"}";

    private ConsoleFixtures() {
    }

    public static OutboxEvent anEventOf(String aggregateType, String aggregateId, String eventType, String payload) {
        return new OutboxEvent(UUID.randomUUID(), aggregateType, aggregateId, eventType, null,
                payload.getBytes(StandardCharsets.UTF_8), null, Map.of());
    }

    /** Writes the events in one transaction, in list order. */
    public static void write(String url, List<OutboxEvent> events) throws Exception {
        try (Connection connection = DriverManager.getConnection(url)) {
            connection.setAutoCommit(false);
            PostgresOutbox.jdbcWriter(PostgresOutboxSettings.defaults()).enqueueAll(connection, events);
            connection.commit();
        }
    }

    /** Parks the rows of these events with a last error, as a publish failure would have. */
    public static void park(String url, String lastError, List<OutboxEvent> events) throws Exception {
        try (Connection connection = DriverManager.getConnection(url);
             PreparedStatement update = connection.prepareStatement("UPDATE public.queuebox_outbox SET status = 'parked',"
                     + " attempts = 3, last_error = ? WHERE event_id = ?")) {
            for (OutboxEvent event : events) {
                update.setString(1, lastError);
                update.setObject(2, event.eventId());
                update.executeUpdate();
            }
        }
    }
}
