package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.ports.ReplaySelector;
import io.queuebox.testkit.services.TestServices;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Review of the claim rounds (parking at claim, then claiming again under the same lease token). Each round is a
 * statement of its own, committed on its own (jdbi.withHandle, autocommit), and each round's lease runs from its
 * own clock_timestamp(). So:
 * <ul>
 *   <li>a later round that fails (the relay's pools set statement_timeout = socketTimeout - 1 s) throws out of
 *       claim() after the earlier rounds committed their leases: those rows stay leased under a token nobody
 *       holds until the lease runs out, and their aggregates with them;</li>
 *   <li>when the rounds take longer than the lease (each statement may run up to 29 s by default, the default
 *       lease is 30 s), the rows of an earlier round are claimable again by a later round of the same claim,
 *       and the merged batch holds the same event twice;</li>
 *   <li>an empty batch keeps claiming while rounds park, one statement pair per round without bound.</li>
 * </ul>
 * A trigger stands in for a slow database: it sleeps in the statement a test wants slow. These are the rounds of
 * a claim that writes leases ({@code holdRowLocks(false)}); a claim that holds row locks runs its rounds in its one
 * transaction and rolls all of them back when one fails.
 */
class PostgresClaimRoundsReviewTest {

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private OutboxStore store;

    @BeforeEach
    void schema() {
        db = TestDatabase.withFreshSchema("rounds");
        settings = db.settings().holdRowLocks(false).build();
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

    /** A BEFORE UPDATE trigger on the outbox that sleeps when {@code condition} holds for the row. */
    private void sleepWhen(String condition, String seconds) {
        String fn = "\"" + db.schema + "\".slow_rows";
        db.execute("CREATE FUNCTION " + fn + "() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF " + condition
                + " THEN PERFORM pg_sleep(" + seconds + "); END IF; RETURN NEW; END $$");
        db.execute("CREATE TRIGGER slow_rows BEFORE UPDATE ON " + settings.qualifiedTable()
                + " FOR EACH ROW EXECUTE FUNCTION " + fn + "()");
    }

    private void noMoreSleeping() {
        db.execute("DROP TRIGGER slow_rows ON " + settings.qualifiedTable());
    }

    private static ClaimRequest request(int maxRows, Duration lease, Ordering ordering) {
        return new ClaimRequest("relay", maxRows, lease, ordering, ParkingPolicy.HOLD_AGGREGATE);
    }

    private String leaseTokenOf(UUID eventId) {
        try (var c = db.dataSource.getConnection(); var s = c.createStatement();
                var rs = s.executeQuery("SELECT lease_token FROM " + settings.qualifiedTable() + " WHERE event_id = '"
                        + eventId + "'")) {
            rs.next();
            return rs.getString(1);
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Round 1 claims a poison row and a good row, parks the poison row, and commits the good row's lease. Round 2
     * is cancelled by statement_timeout (as the relay's pools configure it). claim() throws, so nobody holds the
     * token of the good row: it and the rest of its aggregate wait the whole lease (30 s by default) although
     * nothing was delivered. With one transaction over the rounds (or a release on failure) the good row would
     * be claimable at once.
     */
    @Test
    void aLaterRoundCancelledByStatementTimeoutLeavesTheEarlierRoundsRowsLeasedUnderATokenNobodyHolds() {
        insert("bad", "OrderPlaced", "[]");
        UUID good = insert("a", "OrderPlaced", "{}");
        UUID slow = insert("s", "Slow", "{}");
        UUID goodBehind = insert("a", "OrderPlaced", "{}");
        // only a claim of the 'Slow' row is slow: round 2 of the claim below
        sleepWhen("NEW.event_type = 'Slow' AND NEW.lease_token IS NOT NULL AND OLD.lease_token IS NULL", "3");

        PGSimpleDataSource withTimeout = new PGSimpleDataSource();
        withTimeout.setURL(TestServices.postgresUrl());
        withTimeout.setOptions("-c statement_timeout=1000");
        OutboxStore relay = PostgresOutbox.store(withTimeout, settings);

        // ordering NONE so that round 1 takes exactly 'bad' and 'good' (maxRows 2), round 2 the slow row
        Throwable failure = catchThrowable(() -> relay.claim(request(2, Duration.ofMinutes(1), Ordering.NONE)));
        assertThat(failure).as("round 2 is cancelled by statement_timeout").isNotNull()
                .hasStackTraceContaining("statement timeout");
        noMoreSleeping();

        assertThat(leaseTokenOf(good)).as("the good row of round 1 is still leased by the claim that threw")
                .isNull();
        assertThat(store.claim(request(10, Duration.ofMinutes(1), Ordering.PER_AGGREGATE)).deliveries())
                .extracting(ClaimedDelivery::eventId).as("claimable now, not after the lease")
                .contains(good, goodBehind, slow);
    }

    /**
     * The rounds of one claim take longer than the lease (a slow park statement; with the relay's defaults a round
     * may take 2 x 29 s against a 30 s lease). Round 2 finds round 1's good row claimable again, leases it a
     * second time under the same token, and the merged batch holds it twice.
     */
    @Test
    void roundsThatOutlastTheLeaseReclaimAnEarlierRoundsRowAndTheBatchHoldsItTwice() {
        insert("bad", "OrderPlaced", "[]");
        UUID good = insert("a", "OrderPlaced", "{}");
        sleepWhen("NEW.status = 'parked' AND OLD.status = 'pending'", "1.5");

        ClaimBatch batch = store.claim(request(2, Duration.ofSeconds(1), Ordering.NONE));

        assertThat(batch.deliveries()).extracting(ClaimedDelivery::eventId).as("no event twice in one batch")
                .doesNotHaveDuplicates().containsExactly(good);
    }

    /** The same with per-aggregate ordering: the aggregate's first row comes back twice, ahead of its second. */
    @Test
    void perAggregateRoundsThatOutlastTheLeaseReclaimTheHeadOfAnAggregate() {
        insert("bad", "OrderPlaced", "[]");
        UUID first = insert("a", "OrderPlaced", "{}");
        UUID second = insert("a", "OrderPlaced", "{}");
        sleepWhen("NEW.status = 'parked' AND OLD.status = 'pending'", "1.5");

        // round 1 (maxRows 2): bad + first; a round 2 would have taken first again
        ClaimBatch batch = store.claim(request(2, Duration.ofSeconds(1), Ordering.PER_AGGREGATE));

        // The fix starts no round after a quarter of the lease: the batch is short, and nothing is in it twice.
        assertThat(batch.deliveries()).extracting(ClaimedDelivery::eventId).as("no event twice in one batch")
                .doesNotHaveDuplicates().startsWith(first);
        assertThat(second).isNotNull();
    }

    /**
     * An empty batch keeps claiming while each round parks something: one claim() runs a claim and a park
     * statement per round, as many rounds as there are poison rows in front of the good ones, each bounded only by
     * statement_timeout. The promise is a bounded claim time; MAX_CLAIM_ROUNDS bounds only a non-empty batch.
     */
    @Test
    void anEmptyBatchClaimRunsAsManyRoundsAsThereArePoisonRows() {
        for (int i = 0; i < 60; i++) {
            insert("bad-" + i, "OrderPlaced", "[]");
        }

        ClaimBatch batch = store.claim(request(1, Duration.ofMinutes(1), Ordering.PER_AGGREGATE));

        assertThat(batch.isEmpty()).isTrue();
        assertThat(store.parked(ReplaySelector.allParked(), 100))
                .as("rounds run by one claim of one row (one row parked per round)")
                .hasSizeLessThanOrEqualTo(PostgresOutboxStore.MAX_CLAIM_ROUNDS);
    }

    /**
     * The same, timed: each round's park takes 100 ms here, and the one claim call would take 60 of them (6 s) without
     * the bound on rounds. The margin over MAX_CLAIM_ROUNDS rounds (1 s) leaves room for each round's own statements on
     * a busy machine: 500 ms of it was crossed (1.61 and 1.70 s) while other suites ran on the same two cores.
     */
    @Test
    void anEmptyBatchClaimTakesTimeInProportionToThePoisonRows() {
        for (int i = 0; i < 60; i++) {
            insert("bad-" + i, "OrderPlaced", "[]");
        }
        sleepWhen("NEW.status = 'parked' AND OLD.status = 'pending'", "0.1");

        long start = System.nanoTime();
        store.claim(request(1, Duration.ofMinutes(1), Ordering.PER_AGGREGATE));
        Duration took = Duration.ofNanos(System.nanoTime() - start);

        assertThat(took).as("one claim call, at most MAX_CLAIM_ROUNDS slow rounds")
                .isLessThan(Duration.ofMillis(100L * (PostgresOutboxStore.MAX_CLAIM_ROUNDS + 25)));
    }
}
