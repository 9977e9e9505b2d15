package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.ports.ReplaySelector;
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

    @Test
    void theRoundsOfOneClaimShareItsLeaseAndComeBackInSequenceOrder() {
        UUID first = insert("a", "{}");
        insert("b", "[]");
        insert("c", "[]");
        UUID second = insert("d", "{}");
        UUID third = insert("e", "{}");

        ClaimBatch batch = store.claim(new ClaimRequest("relay", 3, Duration.ofMinutes(1), Ordering.PER_AGGREGATE,
                ParkingPolicy.HOLD_AGGREGATE));

        assertThat(batch.deliveries()).extracting(ClaimedDelivery::eventId).containsExactly(first, second, third);
        assertThat(store.renew(batch.lease(), Duration.ofMinutes(1))).as("one lease over every round").isEqualTo(3);
        assertThat(store.markSent(batch.lease(), List.of(first, second, third))).isEqualTo(3);
    }

    @Test
    void withoutOrderingTheBatchIsFilledToo() {
        insert("a", "[]");
        insert("a", "[]");
        UUID later = insert("a", "{}");
        UUID other = insert("b", "{}");

        assertThat(store.claim(new ClaimRequest("relay", 2, Duration.ofMinutes(1), Ordering.NONE,
                ParkingPolicy.HOLD_AGGREGATE)).deliveries()).extracting(ClaimedDelivery::eventId)
                .containsExactly(later, other);
    }

    /**
     * A claim call is bounded (the review of the rounds: a backlog of undeliverable rows made one call as long
     * as the backlog), so more of them than MAX_CLAIM_ROUNDS rounds can park may take a second call; each call
     * parks what it read, so the good row comes once they are parked.
     */
    @Test
    void aBacklogOfUndeliverableRowsIsParkedOverBoundedClaimCallsAndTheGoodRowThenComes() {
        for (int i = 0; i < 25; i++) {
            insert("bad-" + i, "[]"); // more than MAX_CLAIM_ROUNDS rounds of 2
        }
        UUID good = insert("good", "{}");

        assertThat(claim(2)).as("the first call stops after MAX_CLAIM_ROUNDS rounds").isEmpty();
        assertThat(store.parked(ReplaySelector.allParked(), 100)).hasSize(2 * PostgresOutboxStore.MAX_CLAIM_ROUNDS);
        assertThat(claim(2)).extracting(ClaimedDelivery::eventId).containsExactly(good);
        assertThat(store.parked(ReplaySelector.allParked(), 100)).hasSize(25);
    }

    @Test
    void aShortBatchIsToppedUpForAtMostMaxClaimRoundsStatements() {
        UUID good = insert("good", "{}");
        for (int i = 0; i < 30; i++) {
            insert("bad-" + i, "[]");
        }

        assertThat(claim(2)).extracting(ClaimedDelivery::eventId).containsExactly(good);
        // round 1 claims good and one bad row; each further round claims (and parks) one
        assertThat(store.parked(ReplaySelector.allParked(), 100)).hasSize(PostgresOutboxStore.MAX_CLAIM_ROUNDS);
        assertThat(claim(2)).as("the next claim goes on").isEmpty();
        assertThat(store.parked(ReplaySelector.allParked(), 100)).hasSize(30);
    }
}
