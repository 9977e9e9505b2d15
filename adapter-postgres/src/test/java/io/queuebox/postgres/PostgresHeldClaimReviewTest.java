package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.ports.ReplaySelector;
import io.queuebox.ports.Reschedule;
import io.queuebox.testkit.services.TestServices;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/** Findings of the review of claims that hold row locks, each a scenario that failed before its fix. */
class PostgresHeldClaimReviewTest {

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private OutboxStore store;

    @BeforeEach
    void schema() {
        db = TestDatabase.withFreshSchema("held");
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
     * Two share-lockers (two foreign-key checks of rows that reference the event, say) leave a multixact in the
     * row's xmax after they commit. Read as a transaction id it named nothing running, or nothing at all: the row
     * counted as held by nobody's claim, and it and the rest of its aggregate were never claimed again.
     */
    @Test
    void aRowShareLockedByTwoFinishedTransactionsIsStillClaimed() throws Exception {
        UUID a1 = db.insertRow(settings, "a", "OrderPlaced", "{}");
        UUID a2 = db.insertRow(settings, "a", "OrderPlaced", "{}");
        UUID b1 = db.insertRow(settings, "b", "OrderPlaced", "{}");
        try (Connection first = db.dataSource.getConnection(); Connection second = db.dataSource.getConnection()) {
            first.setAutoCommit(false);
            second.setAutoCommit(false);
            shareLock(first, a1);
            shareLock(second, a1);
            first.commit();
            second.commit();
        }

        var batch = store.claim(new ClaimRequest("relay", 10, Duration.ofSeconds(5), Ordering.PER_AGGREGATE,
                ParkingPolicy.HOLD_AGGREGATE));

        assertThat(batch.deliveries()).extracting(ClaimedDelivery::eventId).containsExactly(a1, a2, b1);
        assertThat(store.markSent(batch.lease(), batch.deliveries().stream().map(ClaimedDelivery::eventId).toList()))
                .isEqualTo(3);
    }

    /**
     * A claim whose rounds park rows at claim runs further rounds in the same transaction. PostgreSQL leaves a
     * transaction's own id out of its snapshot's running list, so once a later transaction has finished (here, the
     * second parking) the rows this claim locked in its first round no longer looked held to its own next choice:
     * it chose and locked them again, and the batch carried the same event twice. Seen first as
     * twoConcurrentClaimersNeverGetTheSameRow failing in CI at 1d11047, where contention ran the extra rounds.
     */
    @Test
    void aLaterRoundDoesNotChooseAgainTheRowsAnEarlierRoundLocked() {
        UUID a1 = db.insertRow(settings, "a", "OrderPlaced", "{}");
        UUID b1 = db.insertRow(settings, "b", "OrderPlaced", "[1]");
        UUID c1 = db.insertRow(settings, "c", "OrderPlaced", "[2]");

        var batch = store.claim(new ClaimRequest("relay", 2, Duration.ofSeconds(5), Ordering.PER_AGGREGATE,
                ParkingPolicy.HOLD_AGGREGATE));

        assertThat(batch.deliveries()).extracting(ClaimedDelivery::eventId).containsExactly(a1);
        assertThat(store.parked(ReplaySelector.allParked(), 10)).extracting(parked -> parked.event().eventId())
                .containsExactlyInAnyOrder(b1, c1);
        assertThat(store.markSent(batch.lease(), List.of(a1))).isEqualTo(1);
    }

    /**
     * The commit that ends a held claim can fail (a deferred constraint, a serialization failure, a server that
     * goes away in the middle). The outcome call must then say so, give back the connection it held, and leave
     * every row of the batch claimable again: the whole batch rolled back, nothing marked.
     */
    @Test
    void aCommitThatFailsGivesBackItsConnectionAndItsRows() throws Exception {
        String application = "held-commit-" + UUID.randomUUID().toString().substring(0, 8);
        PGSimpleDataSource named = new PGSimpleDataSource();
        named.setURL(TestServices.postgresUrl());
        named.setApplicationName(application);
        OutboxStore namedStore = PostgresOutbox.store(named, settings);
        UUID a1 = db.insertRow(settings, "a", "OrderPlaced", "{}");
        db.execute("CREATE FUNCTION " + settings.schema() + ".refuse_sent() RETURNS trigger LANGUAGE plpgsql AS"
                + " $$ BEGIN RAISE EXCEPTION 'sent refused at commit'; END $$");
        db.execute("CREATE CONSTRAINT TRIGGER refuse_sent AFTER UPDATE ON " + settings.qualifiedTable()
                + " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.status = 'sent')"
                + " EXECUTE FUNCTION " + settings.schema() + ".refuse_sent()");
        var request = new ClaimRequest("relay", 10, Duration.ofSeconds(30), Ordering.PER_AGGREGATE,
                ParkingPolicy.HOLD_AGGREGATE);
        var batch = namedStore.claim(request);
        assertThat(batch.deliveries()).extracting(ClaimedDelivery::eventId).containsExactly(a1);

        assertThatThrownBy(() -> namedStore.markSent(batch.lease(), List.of(a1)))
                .hasStackTraceContaining("sent refused at commit");

        assertThat(backendsOf(application)).as("connections the failed claim kept").isZero();
        db.execute("DROP TRIGGER refuse_sent ON " + settings.qualifiedTable());
        var again = store.claim(request);
        assertThat(again.deliveries()).extracting(ClaimedDelivery::eventId).containsExactly(a1);
        assertThat(store.markSent(again.lease(), List.of(a1))).isEqualTo(1);
    }

    /**
     * A relay still on leases and one that holds row locks, on one table (a rolling switch of
     * {@code outbox.holdRowLocks}): the leased relay's claim expires, the holding relay claims the row, fails to
     * publish it and reschedules it. The leased relay's late outcome must be fenced, as it is when a leased relay
     * reclaims: before the fix the row still carried the old token, and the stale outcome marked it sent.
     */
    @Test
    void aStaleLeasedOutcomeIsFencedAfterAHeldClaimWroteItsOutcome() throws Exception {
        OutboxStore leasing = PostgresOutbox.store(db.dataSource, db.settings().build());
        UUID a1 = db.insertRow(settings, "a", "OrderPlaced", "{}");
        var stale = leasing.claim(new ClaimRequest("leased-relay", 10, Duration.ofMillis(200), Ordering.PER_AGGREGATE,
                ParkingPolicy.HOLD_AGGREGATE));
        assertThat(stale.deliveries()).extracting(ClaimedDelivery::eventId).containsExactly(a1);
        Thread.sleep(400);
        var fresh = store.claim(new ClaimRequest("held-relay", 10, Duration.ofSeconds(30), Ordering.PER_AGGREGATE,
                ParkingPolicy.HOLD_AGGREGATE));
        assertThat(fresh.deliveries()).extracting(ClaimedDelivery::eventId).containsExactly(a1);
        assertThat(store.reschedule(fresh.lease(), List.of(new Reschedule(a1, Duration.ofMinutes(5), "broker down"))))
                .isEqualTo(1);

        assertThat(leasing.markSent(stale.lease(), List.of(a1))).as("rows the stale leased claim marked").isZero();
        assertThat(leasing.stats().pending()).isEqualTo(1);
    }

    /**
     * Every outcome statement restarts PostgreSQL's idle countdown of the claim's transaction, as a renewal does.
     * The store counted only renewals: a claim still alive in the database looked abandoned to the store's next
     * claim, which rolled it back, outcomes already reported as written included (the first row came back and
     * was published again; the second outcome found nothing).
     */
    @Test
    void anOutcomeKeepsTheClaimAliveForTheStoreAsForTheDatabase() throws Exception {
        UUID a1 = db.insertRow(settings, "a", "OrderPlaced", "{}");
        UUID b1 = db.insertRow(settings, "b", "OrderPlaced", "{}");
        var request = new ClaimRequest("relay", 10, Duration.ofSeconds(2), Ordering.PER_AGGREGATE,
                ParkingPolicy.HOLD_AGGREGATE);
        var batch = store.claim(request);
        assertThat(batch.deliveries()).extracting(ClaimedDelivery::eventId).containsExactly(a1, b1);
        Thread.sleep(1_400);
        assertThat(store.markSent(batch.lease(), List.of(a1))).isEqualTo(1);
        Thread.sleep(1_400); // past the claim's first deadline, well within the one its outcome restarted

        assertThat(store.claim(request).deliveries()).isEmpty();
        assertThat(store.markSent(batch.lease(), List.of(b1))).as("the second outcome").isEqualTo(1);
        assertThat(store.stats().pending()).isZero();
    }

    /**
     * A release writes nothing on the rows (their lock simply ends with the claim), so it sent no statement: it
     * did not restart PostgreSQL's idle countdown, yet the store took it as if it had. After PostgreSQL ended the
     * claim, a later release still answered that it released the rows, and the claim kept its dead connection.
     */
    @Test
    void aReleaseAfterTheDatabaseEndedTheClaimReleasesNothing() throws Exception {
        UUID a1 = db.insertRow(settings, "a", "OrderPlaced", "{}");
        UUID b1 = db.insertRow(settings, "b", "OrderPlaced", "{}");
        UUID c1 = db.insertRow(settings, "c", "OrderPlaced", "{}");
        var batch = store.claim(new ClaimRequest("relay", 10, Duration.ofSeconds(1), Ordering.PER_AGGREGATE,
                ParkingPolicy.HOLD_AGGREGATE));
        assertThat(batch.deliveries()).extracting(ClaimedDelivery::eventId).containsExactly(a1, b1, c1);
        Thread.sleep(900);
        assertThat(store.release(batch.lease(), List.of(a1))).isEqualTo(1);
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (store.stats().leased() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(50); // PostgreSQL ends the idle claim one second after its last statement
        }
        assertThat(store.stats().leased()).as("rows the ended claim still holds").isZero();

        assertThat(store.release(batch.lease(), List.of(b1))).as("rows released by an ended claim").isZero();
    }

    private long backendsOf(String application) throws Exception {
        try (Connection connection = db.dataSource.getConnection();
             PreparedStatement statement = connection.prepareStatement(
                     "SELECT count(*) FROM pg_stat_activity WHERE application_name = ?")) {
            statement.setString(1, application);
            try (var result = statement.executeQuery()) {
                result.next();
                return result.getLong(1);
            }
        }
    }

    private void shareLock(Connection connection, UUID eventId) throws Exception {
        try (PreparedStatement statement = connection.prepareStatement(
                "SELECT 1 FROM " + settings.qualifiedTable() + " WHERE event_id = ? FOR KEY SHARE")) {
            statement.setObject(1, eventId);
            statement.executeQuery().close();
        }
    }
}
