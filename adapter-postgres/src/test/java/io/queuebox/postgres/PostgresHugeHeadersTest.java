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
import java.util.UUID;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A headers object whose value holds 180 M control characters: 180 MB as jsonb_each_text gives it (and 2 MB stored,
 * compressed), but each one is six bytes in jsonb's text form (\u0001), more than the 1 GB a text datum may hold.
 * Read as text, it failed the claim statement, and with it every claim: the row came first every time (review of
 * cf37699). Headers over OutboxSql.HEADERS_MAX_BYTES are parked at claim with a reason naming the column; large
 * headers under it (stored compressed) are still delivered whole.
 */
class PostgresHugeHeadersTest {

    @ParameterizedTest
    @EnumSource(Ordering.class)
    void headersTooLargeToReadAreParkedAndTheOtherRowsClaimed(Ordering ordering) {
        try (TestDatabase db = TestDatabase.withFreshSchema("hugeesc")) {
            PostgresOutboxSettings settings = db.settings().holdRowLocks(true).build();
            PostgresOutbox.createSchema(db.dataSource, settings);
            OutboxStore store = PostgresOutbox.store(db.dataSource, settings);
            String t = settings.qualifiedTable();
            UUID huge = UUID.randomUUID();
            db.execute("INSERT INTO " + t + " (event_id, aggregate_type, aggregate_id, event_type, payload, headers)"
                    + " VALUES ('" + huge + "', 'order', 'a', 'OrderPlaced', '\\x7b7d',"
                    + " jsonb_build_object('h', repeat(chr(1), 180000000)))");
            UUID large = UUID.randomUUID();
            db.execute("INSERT INTO " + t + " (event_id, aggregate_type, aggregate_id, event_type, payload, headers)"
                    + " VALUES ('" + large + "', 'order', 'c', 'OrderPlaced', '\\x7b7d',"
                    + " jsonb_build_object('big', repeat('x', 500000)))");
            UUID good = UUID.randomUUID();
            db.execute("INSERT INTO " + t + " (event_id, aggregate_type, aggregate_id, event_type, payload)"
                    + " VALUES ('" + good + "', 'order', 'b', 'OrderPlaced', '\\x7b7d')");

            ClaimBatch batch = store.claim(new ClaimRequest("relay", 10, Duration.ofMinutes(1), ordering,
                    ParkingPolicy.CONTINUE_AGGREGATE));

            assertThat(batch.deliveries()).extracting(ClaimedDelivery::eventId).containsExactlyInAnyOrder(large, good);
            assertThat(batch.deliveries().stream().filter(d -> d.eventId().equals(large)).findFirst().orElseThrow()
                    .event().headers().get("big")).hasSize(500000);
            assertThat(store.parked(ReplaySelector.allParked(), 10)).singleElement().satisfies(parked -> {
                assertThat(parked.event().eventId()).isEqualTo(huge);
                assertThat(parked.lastError()).startsWith("headers is 1800000").contains("bytes, more than 1048576");
            });
            store.release(batch.lease(), batch.deliveries().stream().map(ClaimedDelivery::eventId).toList());
        }
    }
}
