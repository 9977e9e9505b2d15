package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.queuebox.jdbc.testing.ReusingDataSource;
import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.testkit.services.TestServices;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Held ordered claims of different processes take turns to choose (a session advisory lock on the claim's
 * connection, OutboxSql CHOICE_TURN_LOCK_KEY): a choice locks nothing, and two relays that chose at once chose the
 * same rows. The turn is waited for at most a tenth of the lease, and released before the claim's connection goes
 * back to its pool, also when the claim failed.
 */
class PostgresHeldChoiceTurnTest {

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private String role;

    @BeforeEach
    void schema() {
        db = TestDatabase.withFreshSchema("choiceturn");
        settings = db.settings().holdRowLocks(true).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
    }

    @AfterEach
    void drop() {
        db.endHeldClaims();
        db.close();
        if (role != null) {
            db.execute("DROP OWNED BY " + role);
            db.execute("DROP ROLE IF EXISTS " + role);
        }
    }

    /** Claims of one row: each full, so the next one takes the turn (a backlog, PostgresOutboxStore backlogSeen). */
    private static ClaimRequest ordered(Duration lease) {
        return new ClaimRequest("turn-test", 1, lease, Ordering.PER_AGGREGATE, ParkingPolicy.HOLD_AGGREGATE);
    }

    /** A full claim of a row of aggregate "first", so that the store's next claim takes the turn. */
    private void fullClaim(OutboxStore store) {
        UUID first = db.insertRow(settings, "first", "created", "{}");
        ClaimBatch batch = store.claim(ordered(Duration.ofSeconds(30)));
        assertThat(batch.deliveries()).extracting(ClaimedDelivery::eventId).containsExactly(first);
        store.markSent(batch.lease(), java.util.List.of(first));
    }

    private long turnsHeld() throws Exception {
        try (Connection connection = db.dataSource.getConnection(); Statement statement = connection.createStatement();
             ResultSet rs = statement.executeQuery("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = "
                     + OutboxSql.CHOICE_TURN_LOCK_KEY + " AND granted")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    @Test
    void aClaimWaitsWhileAnotherRelayChooses() throws Exception {
        OutboxStore store = PostgresOutbox.store(db.dataSource, settings);
        fullClaim(store);
        UUID a1 = db.insertRow(settings, "a", "created", "{}");
        ClaimBatch batch;
        try (Connection other = db.anotherRelaysTurn(settings)) {
            CompletableFuture<ClaimBatch> claim = CompletableFuture.supplyAsync(() -> store.claim(ordered(Duration.ofSeconds(30))));
            Thread.sleep(200);
            assertThat(claim).as("the claim waits for its turn (at most 500 ms: a tenth of its lease, capped)")
                    .isNotDone();
            other.createStatement().execute("SELECT pg_advisory_unlock_all()");
            batch = claim.get(5, TimeUnit.SECONDS);
        }
        assertThat(batch.deliveries()).extracting(ClaimedDelivery::eventId).containsExactly(a1);
        store.markSent(batch.lease(), java.util.List.of(a1));
    }

    @Test
    void aTurnNeverEndedIsWaitedForAtMostATenthOfTheLease() throws Exception {
        OutboxStore store = PostgresOutbox.store(db.dataSource, settings);
        fullClaim(store);
        UUID a1 = db.insertRow(settings, "a", "created", "{}");
        try (Connection other = db.anotherRelaysTurn(settings)) {
            long started = System.nanoTime();
            ClaimBatch batch = store.claim(ordered(Duration.ofSeconds(2)));
            long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);

            assertThat(batch.deliveries()).extracting(ClaimedDelivery::eventId).containsExactly(a1);
            assertThat(millis).as("waited for the turn (200 ms), then chose anyway").isBetween(190L, 2_000L);
            store.markSent(batch.lease(), java.util.List.of(a1));
        }
    }

    @Test
    void aClaimEndsItsTurnBeforeItsConnectionIsReused() throws Exception {
        try (ReusingDataSource pool = TestDatabase.reusing(TestServices.postgresUrl(), "turn-test")) {
            OutboxStore store = PostgresOutbox.store(pool, settings);
            fullClaim(store);
            db.insertRow(settings, "a", "created", "{}");
            ClaimBatch batch = store.claim(ordered(Duration.ofSeconds(30)));
            assertThat(batch.size()).isEqualTo(1);
            assertThat(turnsHeld()).as("turns held while the batch is out").isZero();
            store.markSent(batch.lease(), batch.deliveries().stream().map(ClaimedDelivery::eventId).toList());
            assertThat(store.claim(ordered(Duration.ofSeconds(30))).isEmpty()).isTrue();
            assertThat(turnsHeld()).as("turns held after an empty claim").isZero();
        }
    }

    /**
     * The choice fails (here: the relay's role may not read the table), and the transaction with it, so the release
     * fails too: the claim rolls back and releases its turn, or the next claim on that pooled connection would hold it.
     */
    @Test
    void aClaimWhoseChoiceFailedEndsItsTurnToo() throws Exception {
        role = "qb_turn_" + UUID.randomUUID().toString().substring(0, 8);
        db.execute("CREATE ROLE " + role + " LOGIN");
        db.execute("GRANT USAGE ON SCHEMA \"" + db.schema + "\" TO " + role);
        db.execute("GRANT ALL ON ALL TABLES IN SCHEMA \"" + db.schema + "\" TO " + role);
        String url = TestServices.postgresUrl() + (TestServices.postgresUrl().contains("?") ? "&" : "?") + "user=" + role;
        try (ReusingDataSource pool = TestDatabase.reusing(url, "turn-test")) {
            OutboxStore store = PostgresOutbox.store(pool, settings);
            fullClaim(store);
            db.insertRow(settings, "a", "created", "{}");
            db.execute("REVOKE ALL ON ALL TABLES IN SCHEMA \"" + db.schema + "\" FROM " + role);
            assertThatThrownBy(() -> store.claim(ordered(Duration.ofSeconds(30)))).hasMessageContaining("permission denied");
            assertThat(turnsHeld()).as("turns held once the failed claim's connection is back in the pool").isZero();
        }
    }
}
