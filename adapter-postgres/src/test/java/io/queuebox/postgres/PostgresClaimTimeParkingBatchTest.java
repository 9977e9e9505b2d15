package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Review of issue 12 (parking at claim time): the claim parks undeliverable rows and gives back the later rows of
 * their aggregates, but it returns what is left of the batch. OutboxStore#claim promises "an empty batch when
 * nothing is claimable", and the engine reads a short batch as "no more work": it goes idle for the wake interval
 * (the 30 s reconciliation interval in capture mode) although claimable rows are waiting.
 */
class PostgresClaimTimeParkingBatchTest {

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private OutboxStore store;

    @BeforeEach
    void schema() {
        db = TestDatabase.withFreshSchema("parkbatch");
        settings = db.settings().maxPayloadBytes(16).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        store = PostgresOutbox.store(db.dataSource, settings);
    }

    @AfterEach
    void drop() {
        db.close();
    }

    private UUID insert(String aggregateId, String headers) {
        UUID id = UUID.randomUUID();
        db.execute("INSERT INTO " + settings.qualifiedTable() + " (event_id, aggregate_type, aggregate_id, event_type,"
                + " payload, headers) VALUES ('" + id + "', 'order', '" + aggregateId + "', 'OrderPlaced', '\\x7b7d', '"
                + headers + "')");
        return id;
    }

    private List<ClaimedDelivery> claim(int maxRows) {
        return store.claim(new ClaimRequest("relay", maxRows, Duration.ofMinutes(1), Ordering.PER_AGGREGATE,
                ParkingPolicy.HOLD_AGGREGATE)).deliveries();
    }

    @Test
    void aBatchWhoseRowsWereAllParkedAtClaimIsNotReturnedEmptyWhileGoodRowsAreClaimable() {
        for (int i = 0; i < 3; i++) {
            insert("bad-" + i, "[]");
        }
        List<UUID> good = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            good.add(insert("good-" + i, "{}"));
        }

        assertThat(claim(3)).as("an empty batch tells the engine there is nothing to claim, and it goes idle")
                .extracting(ClaimedDelivery::eventId).containsExactlyElementsOf(good);
    }

    @Test
    void aParkedRowAndTheLaterRowsOfItsAggregateDoNotShortenTheBatch() {
        insert("a", "[]");
        for (int i = 0; i < 3; i++) {
            insert("a", "{}"); // given back: held by the parked row
        }
        List<UUID> good = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            good.add(insert("other-" + i, "{}"));
        }

        assertThat(claim(4)).as("a batch shorter than maxRows reads as 'no more work' (Cycle.PARTIAL)")
                .hasSize(4);
    }
}
