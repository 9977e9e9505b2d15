package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * An outbox whose {@code aggregate_id} has a nondeterministic (case-insensitive ICU) collation: the table created
 * ahead of the shipped scripts, which keep it (CREATE TABLE IF NOT EXISTS). The column's equality then says
 * {@code ORDER-7} and {@code order-7} are one aggregate, and so does everything else in the store: the writers'
 * lock (V2: hashtext under the column's collation serialises the two ids), the head lookup, gaps, the far walk.
 * The held ordered claim's one walk of its window (ce5db8e) partitions by {@code COLLATE "C"}, bytes, and so treats
 * them as two aggregates: {@code order-7} is claimed while the earlier {@code ORDER-7} is in backoff, parked under
 * HOLD_AGGREGATE, or held by another running claim. Leased claims (control) and the held claim before ce5db8e keep
 * it back. (Review of ce5db8e.) The relay's own checks of an ordered claim compared aggregates by String equality
 * too (review of b6b22af).
 */
class PostgresNondeterministicCollationReviewTest {

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private OutboxStore store;

    private void schema(boolean holdRowLocks) {
        db = TestDatabase.withFreshSchema("ndcollation");
        settings = db.settings().holdRowLocks(holdRowLocks).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        db.caseInsensitiveAggregateIds(settings);
        store = PostgresOutbox.store(db.dataSource, settings);
    }

    @AfterEach
    void drop() {
        if (db != null) {
            db.endHeldClaims();
            db.close();
        }
    }

    @ParameterizedTest(name = "holdRowLocks {0}, earlier row {1}")
    @CsvSource({
            "false, in backoff", "false, parked", "false, held by another claim",
            "true, in backoff", "true, parked", "true, held by another claim"})
    void aRowWaitsForAnEarlierRowOfItsAggregateSpelledInAnotherCase(boolean holdRowLocks, String earlier)
            throws SQLException {
        schema(holdRowLocks);
        UUID first = db.insertRow(settings, "ORDER-7", "created", "{}");
        UUID second = db.insertRow(settings, "order-7", "paid", "{}");
        UUID other = db.insertRow(settings, "order-8", "created", "{}");
        assertThat(distinctAggregates()).as("the column's equality: one aggregate, and one more").isEqualTo(2);
        if (earlier.equals("in backoff")) {
            db.execute("UPDATE " + settings.qualifiedTable() + " SET next_attempt_at = now() + interval '1 hour'"
                    + " WHERE event_id = '" + first + "'");
        } else if (earlier.equals("parked")) {
            db.execute("UPDATE " + settings.qualifiedTable() + " SET status = 'parked' WHERE event_id = '" + first + "'");
        }
        try (Connection otherClaim = db.dataSource.getConnection()) {
            otherClaim.setAutoCommit(false);
            if (earlier.equals("held by another claim")) {
                try (Statement statement = otherClaim.createStatement();
                     ResultSet rs = statement.executeQuery("SELECT event_id FROM " + settings.qualifiedTable()
                             + " WHERE event_id = '" + first + "' FOR UPDATE")) {
                    assertThat(rs.next()).isTrue();
                }
            }
            ClaimBatch batch = store.claim(new ClaimRequest("collation-review", 10, Duration.ofSeconds(30),
                    Ordering.PER_AGGREGATE, ParkingPolicy.HOLD_AGGREGATE));
            List<UUID> claimed = batch.deliveries().stream().map(ClaimedDelivery::eventId).toList();
            try {
                assertThat(claimed).as("order-7 behind ORDER-7 (%s), one aggregate by the column's collation", earlier)
                        .contains(other).doesNotContain(second);
            } finally {
                if (!claimed.isEmpty()) {
                    store.release(batch.lease(), claimed);
                }
                otherClaim.rollback();
            }
        }
    }

    /**
     * Parking at claim under HOLD_AGGREGATE: the claim's SQL offers both rows (one aggregate), and the relay parks the
     * undeliverable ORDER-7 and must then leave order-7 out. It compared aggregates by Java's String equality and
     * delivered order-7 (review of b6b22af; leased and held, from before b6b22af).
     */
    @ParameterizedTest(name = "holdRowLocks {0}")
    @ValueSource(booleans = {false, true})
    void aRowBehindAnUndeliverableRowSpelledInAnotherCaseWaitsUnderHoldAggregate(boolean holdRowLocks)
            throws SQLException {
        schema(holdRowLocks);
        UUID first = db.insertRow(settings, "ORDER-7", " ", "{}"); // blank event type: parked at claim
        UUID second = db.insertRow(settings, "order-7", "paid", "{}");
        UUID other = db.insertRow(settings, "order-8", "created", "{}");

        ClaimBatch batch = store.claim(new ClaimRequest("collation-cut", 10, Duration.ofSeconds(30),
                Ordering.PER_AGGREGATE, ParkingPolicy.HOLD_AGGREGATE));
        List<UUID> claimed = batch.deliveries().stream().map(ClaimedDelivery::eventId).toList();
        try {
            assertThat(status(first)).isEqualTo("parked");
            assertThat(claimed).as("order-7 behind the parked ORDER-7 (HOLD_AGGREGATE), one aggregate by the column's"
                    + " collation").contains(other).doesNotContain(second);
        } finally {
            if (!claimed.isEmpty()) {
                store.release(batch.lease(), claimed);
            }
        }
    }

    private String status(UUID id) throws SQLException {
        return db.columnOf(settings, id, "status");
    }

    private long distinctAggregates() throws SQLException {
        try (Connection connection = db.dataSource.getConnection(); Statement statement = connection.createStatement();
             ResultSet rs = statement.executeQuery("SELECT count(DISTINCT aggregate_id) FROM " + settings.qualifiedTable())) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
