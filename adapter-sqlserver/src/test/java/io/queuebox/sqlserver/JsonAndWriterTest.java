package io.queuebox.sqlserver;

import static io.queuebox.sqlserver.Events.anEventFor;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.queuebox.jdbc.Json;
import io.queuebox.ports.OutboxEvent;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The headers' JSON and the writer's statement shapes and validation; no database needed. */
class JsonAndWriterTest {

    private final EventWriter writer = new EventWriter(SqlServerOutboxSettings.builder().maxPayloadBytes(16).build());

    @Test
    void headersSurviveTheRoundTripWhateverTheyContain() {
        Map<String, String> headers = Map.of("traceparent", "00-abc-01", "quote\"d", "back\\slash",
                "control", "line\nbreak\ttab\u0000nul\u0001", "unicode", "žluťoučký 🦊");
        assertThat(Json.parseObject(Json.object(headers))).isEqualTo(headers);
        assertThat(Json.parseObject(" { } ")).isEmpty();
        assertThat(Json.parseObject("{\"a\" : \"\\u00e9\\/\"}")).containsEntry("a", "é/");
        assertThatThrownBy(() -> Json.parseObject("{\"a\":1}")).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("headers column");
    }

    @Test
    void oneStatementCarriesAsManyRowsAsTheParameterLimitAllows() {
        assertThat(EventWriter.ROWS_PER_STATEMENT).isEqualTo(262);
        String full = writer.insertFor(EventWriter.ROWS_PER_STATEMENT);
        assertThat(full.chars().filter(c -> c == '?').count()).isEqualTo(262L * 8).isLessThanOrEqualTo(2100);
        assertThat(writer.insertFor(EventWriter.ROWS_PER_STATEMENT + 1).chars().filter(c -> c == '?').count())
                .isGreaterThan(2100);
        String three = writer.insertFor(3);
        assertThat(three).contains("FROM (VALUES (CAST(? AS uniqueidentifier), ?, ?, ?, ?, ?, ?, ?, 0),"
                + " (CAST(? AS uniqueidentifier), ?, ?, ?, ?, ?, ?, ?, 1), (CAST(? AS uniqueidentifier), ?, ?, ?, ?, ?, ?, ?, 2))")
                .startsWith("INSERT INTO [dbo].[queuebox_outbox] (event_id,").endsWith("ORDER BY v.position");
    }

    @Test
    void aBadEventIsRefusedBeforeAnythingReachesTheDatabaseNamingTheField() {
        OutboxEvent big = OutboxEvent.of("order", "1", "Placed", new byte[17]);
        assertThatThrownBy(() -> writer.validate(List.of(big))).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("event " + big.eventId() + ": payload is 17 bytes, more than outbox.maxPayloadBytes (16)");
        OutboxEvent longId = OutboxEvent.of("order", "x".repeat(256), "Placed", new byte[0]);
        assertThatThrownBy(() -> writer.validate(List.of(longId))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("aggregateId is 256 characters, more than the 255");
        List<OutboxEvent> withNull = new ArrayList<>(Arrays.asList(anEventFor("A"), null));
        assertThatThrownBy(() -> writer.validate(withNull)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("events[1] is null");
        assertThatThrownBy(() -> writer.write(null, List.of(anEventFor("A")))).isInstanceOf(NullPointerException.class)
                .hasMessage("transaction");
        writer.validate(List.of(OutboxEvent.of("order", "x".repeat(255), "Placed", new byte[16])));
    }
}
