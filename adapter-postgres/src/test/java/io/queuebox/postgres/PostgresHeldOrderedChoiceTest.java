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
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Held ordered claims of one store choose one at a time; whatever else a claim does meanwhile must not make the
 * others wait. (Found by the review of 6090d3c, which held the choice across the parking at claim.)
 */
class PostgresHeldOrderedChoiceTest {

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private OutboxStore store;

    @BeforeEach
    void schema() {
        db = TestDatabase.withFreshSchema("choice");
        settings = db.settings().holdRowLocks(true).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        store = PostgresOutbox.store(db.dataSource, settings);
    }

    @AfterEach
    void drop() {
        db.endHeldClaims();
        db.close();
    }

    /**
     * Parking at claim runs on a connection of its own and may take any time (a trigger, a wait for the pool, a
     * commit waiting for a synchronous standby, a connection that died silently): a claim of free rows of other
     * aggregates by another worker of the same store must not wait for it.
     */
    @Test
    void aSlowParkingAtClaimDoesNotStallAnotherOrderedClaimOfTheStore() throws Exception {
        parkingTakes(3);
        db.insertRow(settings, "u", "SlowToPark", "[1]"); // headers not an object: parked at claim, slowly
        UUID d1 = db.insertRow(settings, "d1", "OrderPlaced", "{}");
        UUID d2 = db.insertRow(settings, "d2", "OrderPlaced", "{}");

        CompletableFuture<ClaimBatch> parking = CompletableFuture.supplyAsync(() -> store.claim(ordered(1)));
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> sleepingParkings() == 1);

        long started = System.nanoTime();
        ClaimBatch other = store.claim(ordered(10));
        Duration took = Duration.ofNanos(System.nanoTime() - started);

        release(parking.get(30, TimeUnit.SECONDS));
        release(other);
        assertThat(took).as("a claim of two free rows while another worker parks a row for 3 s")
                .isLessThan(Duration.ofMillis(1500));
        assertThat(other.deliveries()).extracting(ClaimedDelivery::eventId).containsExactly(d1, d2);
    }

    private void release(ClaimBatch batch) {
        if (!batch.isEmpty()) {
            store.release(batch.lease(), batch.deliveries().stream().map(ClaimedDelivery::eventId).toList());
        }
    }

    private static ClaimRequest ordered(int maxRows) {
        return new ClaimRequest("relay", maxRows, Duration.ofSeconds(30), Ordering.PER_AGGREGATE,
                ParkingPolicy.HOLD_AGGREGATE);
    }

    private void parkingTakes(int seconds) {
        db.execute("CREATE FUNCTION \"" + settings.schema() + "\".slow_park() RETURNS trigger LANGUAGE plpgsql AS $$"
                + " BEGIN IF NEW.status = 'parked' AND NEW.event_type = 'SlowToPark' THEN PERFORM pg_sleep(" + seconds
                + "); END IF; RETURN NEW; END $$");
        db.execute("CREATE TRIGGER slow_park BEFORE UPDATE ON " + settings.qualifiedTable()
                + " FOR EACH ROW EXECUTE FUNCTION \"" + settings.schema() + "\".slow_park()");
    }

    private long sleepingParkings() throws Exception {
        try (Connection connection = db.dataSource.getConnection(); Statement statement = connection.createStatement();
             ResultSet rs = statement.executeQuery("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'"
                     + " AND query LIKE '%" + settings.schema() + "%'")) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
