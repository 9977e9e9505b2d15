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
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Review of b6b22af (helper of near2). With a case-insensitive {@code aggregate_id} (as in
 * PostgresNondeterministicCollationReviewTest), the SQL of the claim treats {@code ORDER-7} and {@code order-7} as one
 * aggregate and offers both rows; the store's Java then cuts the aggregate by {@link io.queuebox.ports.AggregateRef}
 * equality, which is exact (case-sensitive) string equality:
 * parking at claim under HOLD_AGGREGATE (Sorted.of) parks the undeliverable {@code ORDER-7} and delivers
 * {@code order-7} behind it anyway, leased or held. Not introduced by b6b22af (Sorted.of predates it).
 */
class PostgresNondeterministicCollationCutReviewTest {

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private OutboxStore store;

    private void schema(boolean holdRowLocks) {
        db = TestDatabase.withFreshSchema("ndcut");
        settings = db.settings().holdRowLocks(holdRowLocks).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        db.execute("CREATE COLLATION \"" + db.schema + "\".ci (provider = icu, locale = 'und-u-ks-level2',"
                + " deterministic = false)");
        db.execute("DROP TRIGGER " + settings.table() + "_order_fixed ON " + settings.qualifiedTable());
        db.execute("ALTER TABLE " + settings.qualifiedTable() + " ALTER COLUMN aggregate_id TYPE text COLLATE \""
                + db.schema + "\".ci");
        PostgresOutbox.createSchema(db.dataSource, settings);
        store = PostgresOutbox.store(db.dataSource, settings);
    }

    @AfterEach
    void drop() {
        if (db != null) {
            db.endHeldClaims();
            db.close();
        }
    }

    @ParameterizedTest(name = "holdRowLocks {0}")
    @ValueSource(booleans = {false, true})
    void aRowBehindAnUndeliverableRowSpelledInAnotherCaseWaitsUnderHoldAggregate(boolean holdRowLocks) {
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

    private String status(UUID id) {
        try (Connection connection = db.dataSource.getConnection(); Statement statement = connection.createStatement();
             ResultSet rs = statement.executeQuery("SELECT status FROM " + settings.qualifiedTable()
                     + " WHERE event_id = '" + id + "'")) {
            rs.next();
            return rs.getString(1);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
