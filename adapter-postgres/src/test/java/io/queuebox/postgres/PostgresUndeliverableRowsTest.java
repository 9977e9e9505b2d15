package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkedEvent;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.ports.ReplaySelector;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Rows written around the writer (by hand, by another tool) that no broker can take: headers that are not a
 * JSON object of strings, a payload over outbox.maxPayloadBytes (only when it was set). They are parked at claim with a reason that
 * names them, and they hold neither the claim of the other rows nor (beyond their own aggregate) delivery.
 */
class PostgresUndeliverableRowsTest {

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private OutboxStore store;

    @BeforeEach
    void schema() {
        db = TestDatabase.withFreshSchema("undeliverable");
        settings = db.settings().maxPayloadBytes(16).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        store = PostgresOutbox.store(db.dataSource, settings);
    }

    @AfterEach
    void drop() {
        db.close();
    }

    private UUID insert(String aggregateId, String payloadHex, String headers) {
        UUID id = UUID.randomUUID();
        db.execute("INSERT INTO " + settings.qualifiedTable() + " (event_id, aggregate_type, aggregate_id, event_type,"
                + " payload, headers) VALUES ('" + id + "', 'order', '" + aggregateId + "', 'OrderPlaced', '\\x"
                + payloadHex + "', '" + headers + "')");
        return id;
    }

    private ClaimBatch claim(ParkingPolicy parking) {
        return store.claim(new ClaimRequest("relay", 10, Duration.ofMinutes(1), Ordering.PER_AGGREGATE, parking));
    }

    private Map<UUID, String> parked() {
        return store.parked(ReplaySelector.allParked(), 10).stream()
                .collect(Collectors.toMap(p -> p.event().eventId(), ParkedEvent::lastError));
    }

    @Test
    void headersThatAreNotAnObjectAreParkedWithTheirTypeAndTextAndTheOtherRowsAreClaimed() {
        UUID array = insert("a", "7b7d", "[\"traceparent\", 1]");
        UUID scalar = insert("b", "7b7d", "\"just text\"");
        UUID good = insert("c", "7b7d", "{\"traceparent\": \"00-1\", \"retries\": 3}");

        ClaimBatch batch = claim(ParkingPolicy.HOLD_AGGREGATE);

        assertThat(batch.deliveries()).extracting(ClaimedDelivery::eventId).containsExactly(good);
        assertThat(batch.deliveries().get(0).event().headers()).containsEntry("traceparent", "00-1")
                .containsEntry("retries", "3");
        assertThat(parked()).containsOnly(
                Map.entry(array, "headers is a JSON array, not an object of strings: [\"traceparent\", 1];"
                        + " write the headers column as {\"name\": \"value\", ...} and replay the event"),
                Map.entry(scalar, "headers is a JSON string, not an object of strings: \"just text\";"
                        + " write the headers column as {\"name\": \"value\", ...} and replay the event"));
    }

    @Test
    void aNullHeaderValueAndAnOversizedPayloadAreParkedNamingTheHeaderAndTheSizes() {
        UUID nullValue = insert("a", "7b7d", "{\"traceparent\": null}");
        UUID large = insert("b", "7b" + "20".repeat(30) + "7d", "{}");

        assertThat(claim(ParkingPolicy.HOLD_AGGREGATE).deliveries()).isEmpty();
        assertThat(parked()).containsOnly(
                Map.entry(nullValue, "header 'traceparent' is JSON null, not a string;"
                        + " write the headers column as {\"name\": \"value\", ...} and replay the event"),
                Map.entry(large, "payload is 32 bytes, more than outbox.maxPayloadBytes (16); raise"
                        + " outbox.maxPayloadBytes (and the broker's limit) or make the event smaller, then replay it"));
    }

    @Test
    void withHoldAggregateTheLaterRowsOfAParkedRowsAggregateGoBackUnclaimed() throws SQLException {
        UUID bad = insert("a", "7b7d", "[]");
        UUID later = insert("a", "7b7d", "{}");
        UUID other = insert("b", "7b7d", "{}");

        assertThat(claim(ParkingPolicy.HOLD_AGGREGATE).deliveries()).extracting(ClaimedDelivery::eventId)
                .containsExactly(other);
        assertThat(parked()).containsOnlyKeys(bad);
        assertThat(leaseOf(later)).as("released, not leased").isNull();
        assertThat(claim(ParkingPolicy.HOLD_AGGREGATE).deliveries()).as("held by the parked row").isEmpty();
    }

    @Test
    void withContinueAggregateTheLaterRowsOfAParkedRowsAggregateAreDelivered() {
        insert("a", "7b7d", "[]");
        UUID later = insert("a", "7b7d", "{}");

        assertThat(claim(ParkingPolicy.CONTINUE_AGGREGATE).deliveries()).extracting(ClaimedDelivery::eventId)
                .containsExactly(later);
    }

    @Test
    void withoutAConfiguredLimitNoRowIsParkedForItsSizeEvenAboveTheWritersDefault() {
        OutboxStore relayWithTheDefault = PostgresOutbox.store(db.dataSource, db.settings().build());
        UUID id = UUID.randomUUID();
        int size = PostgresOutboxSettings.DEFAULT_MAX_PAYLOAD_BYTES * 4; // a writer that allows 4 MiB wrote it
        db.execute("INSERT INTO " + settings.qualifiedTable() + " (event_id, aggregate_type, aggregate_id, event_type,"
                + " payload) VALUES ('" + id + "', 'order', 'a', 'OrderPlaced', convert_to(repeat('x', " + size
                + "), 'UTF8'))");

        ClaimBatch batch = relayWithTheDefault.claim(new ClaimRequest("relay", 10, Duration.ofMinutes(1),
                Ordering.PER_AGGREGATE, ParkingPolicy.HOLD_AGGREGATE));

        assertThat(batch.deliveries()).extracting(ClaimedDelivery::eventId).containsExactly(id);
        assertThat(batch.deliveries().get(0).event().payload()).hasSize(size);
        assertThat(parked()).isEmpty();
    }

    private String leaseOf(UUID id) throws SQLException {
        return db.columnOf(settings, id, "lease_token");
    }
}
