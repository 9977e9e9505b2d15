package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A held claim's outcome statement can wait (a lock another session holds on the table, a slow commit). Other claims
 * of the same store must not wait with it: every claim first sweeps the store's held claims for abandoned ones, and
 * the engine asks when the next row is due, and both used to wait on the monitor of the claim whose outcome was
 * being written. With a record stage (pipelineDepth ≥ 2) the claim of batch N+2 then waited for the mark-sent of N,
 * and with two workers each claim waited for the other worker's mark-sent and commit. Found by the review of the
 * record stage with the real store (helper-40).
 */
class PostgresHeldClaimBusyOutcomeTest {

    private static final ClaimRequest ONE_ROW = new ClaimRequest("relay", 1, Duration.ofSeconds(30),
            Ordering.PER_AGGREGATE, ParkingPolicy.HOLD_AGGREGATE);

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private OutboxStore store;

    @BeforeEach
    void schema() {
        db = TestDatabase.withFreshSchema("busyoutcome");
        settings = db.settings().holdRowLocks(true).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        store = PostgresOutbox.store(db.dataSource, settings);
    }

    @AfterEach
    void drop() {
        db.endHeldClaims();
        db.close();
    }

    @Test
    void aClaimDoesNotWaitForAnotherClaimsOutcomeStatement() throws Exception {
        UUID a1 = db.insertRow(settings, "a", "OrderPlaced", "{}");
        UUID b1 = db.insertRow(settings, "b", "OrderPlaced", "{}");
        ClaimBatch first = store.claim(ONE_ROW);
        assertThat(first.deliveries()).extracting(ClaimedDelivery::eventId).containsExactly(a1);

        try (Connection locker = db.dataSource.getConnection()) {
            CompletableFuture<Integer> marking = markSentBehindATableLock(locker, first, a1);

            CompletableFuture<ClaimBatch> second = CompletableFuture.supplyAsync(() -> store.claim(ONE_ROW));
            ClaimBatch claimed = second.completeOnTimeout(null, 3, TimeUnit.SECONDS).get();
            assertThat(claimed).as("a claim made while another claim's mark-sent waited 3 s").isNotNull();
            assertThat(claimed.deliveries()).extracting(ClaimedDelivery::eventId).containsExactly(b1);
            assertThat(marking).as("the mark-sent still waits on the table lock").isNotDone();

            locker.rollback();
            assertThat(marking.get(10, TimeUnit.SECONDS)).isEqualTo(1);
            assertThat(store.markSent(claimed.lease(), List.of(b1))).isEqualTo(1);
        }
    }

    @Test
    void whenTheNextRowIsDueIsAnsweredWhileAnotherClaimsOutcomeStatementWaits() throws Exception {
        UUID a1 = db.insertRow(settings, "a", "OrderPlaced", "{}");
        db.insertRow(settings, "b", "OrderPlaced", "{}");
        ClaimBatch first = store.claim(ONE_ROW);
        assertThat(first.deliveries()).extracting(ClaimedDelivery::eventId).containsExactly(a1);

        try (Connection locker = db.dataSource.getConnection()) {
            CompletableFuture<Integer> marking = markSentBehindATableLock(locker, first, a1);

            CompletableFuture<Optional<Duration>> due = CompletableFuture.supplyAsync(store::timeUntilNextDue);
            Optional<Duration> answer = due.completeOnTimeout(null, 3, TimeUnit.SECONDS).get();
            assertThat(answer).as("an answer while another claim's mark-sent waited 3 s").isNotNull();
            assertThat(answer).contains(Duration.ZERO); // b1 is pending and free
            assertThat(marking).isNotDone();

            locker.rollback();
            assertThat(marking.get(10, TimeUnit.SECONDS)).isEqualTo(1);
        }
    }

    /** Locks the table against updates from {@code locker}, then starts the mark-sent, which waits behind it. */
    private CompletableFuture<Integer> markSentBehindATableLock(Connection locker, ClaimBatch batch, UUID eventId)
            throws Exception {
        locker.setAutoCommit(false);
        try (Statement statement = locker.createStatement()) {
            statement.execute("LOCK TABLE " + settings.qualifiedTable() + " IN SHARE MODE");
        }
        CompletableFuture<Integer> marking = CompletableFuture.supplyAsync(() -> store.markSent(batch.lease(),
                List.of(eventId)));
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!waitingOnTheTableLock() && System.nanoTime() < until) {
            Thread.sleep(20);
        }
        assertThat(waitingOnTheTableLock()).as("the mark-sent waits on the table lock").isTrue();
        return marking;
    }

    private boolean waitingOnTheTableLock() throws Exception {
        try (Connection look = db.dataSource.getConnection(); Statement statement = look.createStatement();
             var rs = statement.executeQuery("SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'relation'"
                     + " AND relation = '" + settings.qualifiedTable() + "'::regclass")) {
            rs.next();
            return rs.getInt(1) > 0;
        }
    }
}
