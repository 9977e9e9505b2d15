package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.ports.ReplaySelector;
import io.queuebox.ports.ParkedEvent;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Review of issue 12 (parking at claim time): the claim checks that headers are a JSON object of non-null values
 * and that the payload fits, but OutboxEvent refuses more than that (a blank header name, a blank event type,
 * aggregate type or id, a blank destination), and the table allows all of them. Such a row makes the mapper throw
 * after the claim committed its lease: the claim fails, the row and the good rows claimed with it stay leased
 * under a token nobody holds, and when the lease runs out the next claim takes the same rows again (the poison row
 * is the lowest ready seq). Those good rows, and with per-aggregate ordering everything after them in their
 * aggregates, are never delivered.
 */
class PostgresPoisonRowClaimTest {

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private OutboxStore store;

    @BeforeEach
    void schema() {
        db = TestDatabase.withFreshSchema("poison");
        settings = db.settings().build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        store = PostgresOutbox.store(db.dataSource, settings);
    }

    @AfterEach
    void drop() {
        db.close();
    }

    private UUID insert(String aggregateId, String eventType, String headers) {
        return db.insertRow(settings, aggregateId, eventType, headers);
    }

    private ClaimBatch claim() {
        return store.claim(new ClaimRequest("relay", 10, Duration.ofMillis(200), Ordering.PER_AGGREGATE,
                ParkingPolicy.HOLD_AGGREGATE));
    }

    @Test
    void aBlankHeaderNameIsParkedAtClaimAndTheRestOfTheBatchIsDelivered() {
        UUID bad = insert("a", "OrderPlaced", "{\"\": \"x\"}");
        UUID good = insert("b", "OrderPlaced", "{}");

        assertThat(claim().deliveries()).extracting(ClaimedDelivery::eventId).containsExactly(good);
        assertThat(store.parked(ReplaySelector.allParked(), 10)).extracting(p -> p.event().eventId()).containsExactly(bad);
    }

    @Test
    void aBlankEventTypeIsParkedAtClaimAndTheRestOfTheBatchIsDelivered() {
        UUID bad = insert("a", " ", "{}");
        UUID good = insert("b", "OrderPlaced", "{}");

        assertThat(claim().deliveries()).extracting(ClaimedDelivery::eventId).containsExactly(good);
        assertThat(store.parked(ReplaySelector.allParked(), 10)).extracting(p -> p.event().eventId()).containsExactly(bad);
    }

    @Test
    void theGoodRowsClaimedWithAPoisonRowAreDeliveredEventually() throws InterruptedException {
        insert("a", "OrderPlaced", "{\"\": \"x\"}");
        UUID good = insert("b", "OrderPlaced", "{}");
        UUID later = insert("b", "OrderShipped", "{}");

        boolean delivered = false;
        for (int attempt = 0; attempt < 5 && !delivered; attempt++) {
            try {
                delivered = claim().deliveries().stream().anyMatch(d -> d.eventId().equals(good));
            } catch (RuntimeException failedClaim) {
                // what the engine sees: a failed cycle; it pauses and claims again
            }
            Thread.sleep(300); // longer than the 200 ms lease the failed claim left behind
        }
        assertThat(delivered).as("the good row " + good + " (and " + later + " behind it) keeps being claimed with the"
                + " poison row and is never delivered").isTrue();
    }

    private UUID insertRow(String aggregateType, String aggregateId, String eventType, String destination,
            String headers) {
        UUID id = UUID.randomUUID();
        db.execute("INSERT INTO " + settings.qualifiedTable() + " (event_id, aggregate_type, aggregate_id, event_type,"
                + " destination, payload, headers) VALUES ('" + id + "', '" + aggregateType + "', '" + aggregateId
                + "', '" + eventType + "', " + (destination == null ? "NULL" : "'" + destination + "'")
                + ", '\\x7b7d', '" + headers + "')");
        return id;
    }

    @Test
    void eachValueOutboxEventRefusesIsParkedNamingItsColumnAndTheFixAndIsListed() {
        UUID aggregateType = insertRow(" ", "a", "OrderPlaced", null, "{}");
        UUID aggregateId = insertRow("order", "", "OrderPlaced", null, "{}");
        UUID eventType = insertRow("order", "c", "", null, "{}");
        UUID destination = insertRow("order", "d", "OrderPlaced", " ", "{}");
        UUID headerName = insertRow("order", "e", "OrderPlaced", "orders", "{\"\": \"x\", \"trace\": \"1\"}");
        UUID good = insertRow("order", "f", "OrderPlaced", null, "{}");

        assertThat(claim().deliveries()).extracting(ClaimedDelivery::eventId).containsExactly(good);

        Map<UUID, ParkedEvent> parked = store.parked(ReplaySelector.allParked(), 10).stream()
                .collect(Collectors.toMap(p -> p.event().eventId(), p -> p));
        assertThat(parked).containsOnlyKeys(aggregateType, aggregateId, eventType, destination, headerName);
        assertThat(parked.get(aggregateType).lastError()).isEqualTo("aggregate_type: aggregateType must be non-blank,"
                + " got:  ; write a non-blank aggregate_type and replay the event");
        assertThat(parked.get(aggregateId).lastError()).isEqualTo("aggregate_id: aggregateId must be non-blank,"
                + " got: ; write a non-blank aggregate_id and replay the event");
        assertThat(parked.get(eventType).lastError()).isEqualTo("event_type: eventType must be non-blank,"
                + " got: ; write a non-blank event_type and replay the event");
        assertThat(parked.get(destination).lastError()).isEqualTo("destination: destination must be null or"
                + " non-blank; write NULL (the configured routing) or a non-blank destination and replay the event");
        assertThat(parked.get(headerName).lastError()).startsWith("headers: header names must be non-blank")
                .endsWith("; write the headers column as {\"name\": \"value\", ...} with non-blank names and"
                        + " replay the event");
        // Listed as far as an event can show them: blank texts as (blank), no blank destination or header name.
        assertThat(parked.get(eventType).event().eventType()).isEqualTo("(blank)");
        assertThat(parked.get(aggregateType).event().aggregate()).hasToString("(blank)/a");
        assertThat(parked.get(destination).event().destinationOverride()).isEmpty();
        assertThat(parked.get(headerName).event().headers()).containsExactly(Map.entry("trace", "1"));
        assertThat(parked.get(headerName).event().destinationOverride()).contains("orders");
    }
}
