package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import java.sql.SQLException;
import java.time.Duration;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The cost of the claim and of a lease renewal on the real PostgreSQL, read from their plans
 * ({@code EXPLAIN (ANALYZE, BUFFERS)}): a blocked aggregate's long tail and a large backlog must not make
 * either of them walk every pending row.
 */
class PostgresClaimPlanTest {

    private static final int BATCH = 100;
    private static final Pattern SHARED = PlanProbe.SHARED;

    private static TestDatabase db;
    private static PostgresOutboxSettings settings;
    private static OutboxSql sql;
    private static OutboxStore store;

    @BeforeAll
    static void schema() {
        db = TestDatabase.withFreshSchema("plan");
        settings = db.settings().holdRowLocks(false).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        sql = new OutboxSql(settings);
        store = PostgresOutbox.store(db.dataSource, settings);
    }

    @AfterAll
    static void drop() {
        db.close();
    }

    @BeforeEach
    void empty() {
        db.execute("TRUNCATE " + settings.qualifiedTable());
    }

    // ------------------------------------------------------------------------------- a hot aggregate

    @ParameterizedTest(name = "head {0}")
    @CsvSource(delimiter = '|', value = {
            "leased by another relay | lease_token = gen_random_uuid(), lease_owner = 'other-relay', lease_until = now() + interval '1 hour'",
            "in backoff | attempts = 1, next_attempt_at = now() + interval '1 hour'",
            "parked | status = 'parked', attempts = 20"})
    void behindABlockedHeadTheClaimCostsTheSameWhateverTheLengthOfTheTail(String head, String blockHead)
            throws Exception {
        long shortTail = claimBuffersBehindABlockedHead(2_000, blockHead);
        long longTail = claimBuffersBehindABlockedHead(20_000, blockHead);

        assertThat(longTail).as("shared buffers of the claim behind a tail of 20,000 rows vs %d behind 2,000",
                shortTail).isLessThan(shortTail * 3 / 2);
    }

    @Test
    void rowsBeyondABlockedTailAreClaimedInOrderWithTheLaterRowsOfTheirAggregates() {
        insertRows("hot", 3 * OutboxSql.claimWindow(BATCH));
        insertRows("cold-1", 3);
        insertRows("cold-2", 2);
        insertRows("cold-1", 2);
        db.execute("UPDATE " + settings.qualifiedTable() + " SET lease_token = gen_random_uuid(),"
                + " lease_owner = 'other-relay', lease_until = now() + interval '1 hour'"
                + " WHERE seq = (SELECT min(seq) FROM " + settings.qualifiedTable() + ")");

        ClaimBatch batch = store.claim(request(ParkingPolicy.HOLD_AGGREGATE));

        assertThat(batch.deliveries()).extracting(d -> d.aggregate().id())
                .containsExactly("cold-1", "cold-1", "cold-1", "cold-2", "cold-2", "cold-1", "cold-1");
        assertThat(batch.deliveries()).extracting(ClaimedDelivery::sequence).isSorted();
    }

    @Test
    void beyondABlockedTailAParkedRowHoldsItsAggregateOnlyUnderHoldAggregate() {
        insertRows("hot", 3 * OutboxSql.claimWindow(BATCH));
        insertRows("cold", 3);
        db.execute("UPDATE " + settings.qualifiedTable() + " SET lease_token = gen_random_uuid(),"
                + " lease_owner = 'other-relay', lease_until = now() + interval '1 hour'"
                + " WHERE seq = (SELECT min(seq) FROM " + settings.qualifiedTable() + ")");
        db.execute("UPDATE " + settings.qualifiedTable() + " SET status = 'parked', attempts = 20"
                + " WHERE seq = (SELECT min(seq) FROM " + settings.qualifiedTable() + " WHERE aggregate_id = 'cold')");

        assertThat(store.claim(request(ParkingPolicy.HOLD_AGGREGATE)).isEmpty()).isTrue();
        ClaimBatch continuing = store.claim(request(ParkingPolicy.CONTINUE_AGGREGATE));

        assertThat(continuing.deliveries()).extracting(d -> d.aggregate().id()).containsExactly("cold", "cold");
    }

    @Test
    void batchesInFlightAtTheFrontDoNotMakeTheClaimVisitEveryAggregate() throws Exception {
        long fewAggregates = claimBuffersBehindBatchesInFlight(2_000);
        long manyAggregates = claimBuffersBehindBatchesInFlight(20_000);

        // Ten times the aggregates: visiting each of them would cost ten times the buffers; the planner's
        // choice between plans of a small and a larger table moves the figure by less than half that.
        assertThat(manyAggregates).as("shared buffers with 20,000 aggregates behind 4 leased batches vs %d with 2,000",
                fewAggregates).isLessThan(fewAggregates * 3);
    }

    /** Four batches leased by other workers at the front, then one pending row for each of many aggregates. */
    private long claimBuffersBehindBatchesInFlight(int aggregates) throws Exception {
        empty();
        int rows = aggregates + OutboxSql.claimWindow(BATCH);
        // Several transactions: each holds one write lock per aggregate until it commits (V2).
        for (int from = 1; from <= rows; from += 5_000) {
            db.execute("INSERT INTO " + settings.qualifiedTable()
                    + " (event_id, aggregate_type, aggregate_id, event_type, payload)"
                    + " SELECT gen_random_uuid(), 'order', 'agg-' || g, 'created', decode(repeat('ab', 100), 'hex')"
                    + " FROM generate_series(" + from + ", " + Math.min(rows, from + 4_999) + ") g");
        }
        db.execute("UPDATE " + settings.qualifiedTable() + " SET lease_token = gen_random_uuid(),"
                + " lease_owner = 'other-worker', lease_until = now() + interval '1 hour'"
                + " WHERE seq IN (SELECT seq FROM " + settings.qualifiedTable() + " ORDER BY seq LIMIT "
                + OutboxSql.claimWindow(BATCH) + ")");
        db.execute("ANALYZE " + settings.qualifiedTable());
        PlanProbe.Plan plan = explain(sql.claimOrdered, "maxRows", BATCH, "window", OutboxSql.claimWindow(BATCH),
                "parkedHolds", true, "owner", "'plan-test'", "token", "'" + UUID.randomUUID() + "'::uuid",
                "leaseMicros", 30_000_000L);
        assertThat(plan.rows()).as("rows the claim returned: %s", plan.text()).isEqualTo(BATCH);
        return plan.buffers();
    }

    private long claimBuffersBehindABlockedHead(int tail, String blockHead) throws Exception {
        return claimBuffersBehindABlockedHead(tail, blockHead, true);
    }

    /** Without {@code analyzed}, the statistics are those of a table of sent rows since emptied by its purge. */
    private long claimBuffersBehindABlockedHead(int tail, String blockHead, boolean analyzed) throws Exception {
        empty();
        if (!analyzed) {
            PlanProbe.statisticsOfSentRows(db, settings);
        }
        insertRows("hot", tail + 1);
        for (int i = 0; i < 50; i++) {
            insertRows("cold-" + i, 2);
        }
        db.execute("UPDATE " + settings.qualifiedTable() + " SET " + blockHead
                + " WHERE seq = (SELECT min(seq) FROM " + settings.qualifiedTable() + ")");
        if (analyzed) {
            db.execute("ANALYZE " + settings.qualifiedTable());
        }
        PlanProbe.Plan plan = explain(sql.claimOrdered, "maxRows", BATCH, "window", OutboxSql.claimWindow(BATCH),
                "parkedHolds", true, "owner", "'plan-test'", "token", "'" + UUID.randomUUID() + "'::uuid",
                "leaseMicros", 30_000_000L);
        assertThat(plan.rows()).as("rows the claim returned: %s", plan.text()).isEqualTo(100);
        return plan.buffers();
    }

    // ------------------------------------------------------------------------------- statistics of sent rows

    /**
     * The steady state of an outbox is a table of sent rows, and that is what (auto)analyze last saw when a backlog
     * builds up (a relay down for a while, a burst): the statistics then say almost no row is pending. The planner,
     * trusting them, ran the held-back check of every candidate as a walk of every unsent row (one claim of 500 rows
     * took 6 s with 30,000 pending). The check must stay one index descent per candidate whatever the statistics.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"leased claim", "held claim's choice"})
    void withTheStatisticsOfATableOfSentRowsTheClaimCostsTheSameWhateverTheBacklog(String claim) throws Exception {
        String statement = claim.startsWith("leased") ? sql.claimOrdered : sql.chooseOrdered;
        long smallBacklog = claimBuffersUnderStatisticsOfSentRows(statement, 2_000);
        long largeBacklog = claimBuffersUnderStatisticsOfSentRows(statement, 20_000);

        assertThat(largeBacklog).as("shared buffers of the claim with 20,000 rows pending vs %d with 2,000, the"
                + " statistics taken on a table of sent rows", smallBacklog).isLessThan(smallBacklog * 3 / 2);
    }

    @Test
    void withTheStatisticsOfATableOfSentRowsTheClaimBehindABlockedHeadCostsTheSameWhateverTheTail() throws Exception {
        String blockHead = "lease_token = gen_random_uuid(), lease_owner = 'other-relay', lease_until = now() + interval '1 hour'";
        long shortTail = claimBuffersBehindABlockedHead(2_000, blockHead, false);
        long longTail = claimBuffersBehindABlockedHead(20_000, blockHead, false);

        assertThat(longTail).as("shared buffers of the claim behind a tail of 20,000 rows vs %d behind 2,000, the"
                + " statistics taken on a table of sent rows", shortTail).isLessThan(shortTail * 3 / 2);
    }

    /**
     * One hot aggregate whose rows are all ready (a backlog of one stream): the held-back check of each candidate
     * must look at its aggregate's head once, not walk every earlier sibling nor scan the table, so the claim costs
     * about what the same claim costs over many aggregates.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"leased claim", "held claim's choice"})
    void inOneHotAggregateTheClaimCostsAboutWhatItCostsOverManyAggregates(String claim) throws Exception {
        String statement = claim.startsWith("leased") ? sql.claimOrdered : sql.chooseOrdered;
        long spread = freshClaimBuffers(statement, 1_000);
        long hot = freshClaimBuffers(statement, 1);

        assertThat(hot).as("shared buffers of a 500-row claim of 20,000 rows in one aggregate vs %d over 1,000"
                + " aggregates", spread).isLessThan(spread * 2);
    }

    /** A 500-row claim of 20,000 pending rows over {@code aggregates} aggregates, freshly analyzed. */
    private long freshClaimBuffers(String statement, int aggregates) throws Exception {
        empty();
        insertOverAggregates(20_000, aggregates, "'pending'");
        db.execute("ANALYZE " + settings.qualifiedTable());
        PlanProbe.Plan plan = explain(statement, "maxRows", 500, "window", OutboxSql.claimWindow(500),
                "parkedHolds", true, "owner", "'plan-test'", "token", "'" + UUID.randomUUID() + "'::uuid",
                "leaseMicros", 30_000_000L, "taken", "'{}'::uuid[]", "millis", "'30000'");
        assertThat(plan.rows()).as("rows the claim returned: %s", plan.text()).isEqualTo(500);
        return plan.buffers();
    }

    /** A table of sent rows, analyzed, then emptied by its purge and refilled with {@code pending} rows. */
    private long claimBuffersUnderStatisticsOfSentRows(String statement, int pending) throws Exception {
        empty();
        PlanProbe.statisticsOfSentRows(db, settings);
        insertOverAggregates(pending, 1_000, "'pending'");
        PlanProbe.Plan plan = explain(statement, "maxRows", BATCH, "window", OutboxSql.claimWindow(BATCH),
                "parkedHolds", true, "owner", "'plan-test'", "token", "'" + UUID.randomUUID() + "'::uuid",
                "leaseMicros", 30_000_000L, "taken", "'{}'::uuid[]", "millis", "'30000'");
        assertThat(plan.rows()).as("rows the claim returned: %s", plan.text()).isEqualTo(BATCH);
        return plan.buffers();
    }

    // ------------------------------------------------------------------------------- lease renewal

    @Test
    void aLeaseRenewalFindsItsRowsWithoutWalkingTheBacklog() throws Exception {
        insertRows("backlog", 20_000);
        UUID token = UUID.randomUUID();
        db.execute("UPDATE " + settings.qualifiedTable() + " SET lease_token = '" + token + "',"
                + " lease_owner = 'me', lease_until = now() + interval '30 seconds'"
                + " WHERE seq IN (SELECT seq FROM " + settings.qualifiedTable() + " ORDER BY seq DESC LIMIT 10)");
        db.execute("ANALYZE " + settings.qualifiedTable());

        PlanProbe.Plan plan = explain(sql.renew, "token", "'" + token + "'::uuid", "leaseMicros", 30_000_000L);

        assertThat(plan.text()).contains("Update on");
        // The search must not grow with the backlog; the writes grow with the rows and their index
        // entries (about 20 buffers a row), so the total bound is per renewed row, with headroom.
        assertThat(searchBuffers(plan)).as("buffers to find 10 rows among 20,000 pending: %s", plan.text())
                .isLessThan(20);
        assertThat(plan.buffers()).as("buffers to renew 10 rows among 20,000 pending: %s", plan.text())
                .isLessThan(10 * 40);
        assertThat(plan.text()).doesNotContain("Seq Scan");
    }

    // ------------------------------------------------------------------------------- helpers

    private static ClaimRequest request(ParkingPolicy parking) {
        return new ClaimRequest("plan-test", BATCH, Duration.ofMinutes(5), Ordering.PER_AGGREGATE, parking);
    }

    private static void insertRows(String aggregateId, int count) {
        db.execute("INSERT INTO " + settings.qualifiedTable()
                + " (event_id, aggregate_type, aggregate_id, event_type, payload)"
                + " SELECT gen_random_uuid(), 'order', '" + aggregateId + "', 'created', decode(repeat('ab', 100), 'hex')"
                + " FROM generate_series(1, " + count + ")");
    }

    /** The shared buffers of the node under the top one: for an UPDATE, the search for its rows. */
    private static long searchBuffers(PlanProbe.Plan plan) {
        Matcher buffers = SHARED.matcher(plan.text());
        assertThat(buffers.find() && buffers.find()).as("a second node with buffers in %s", plan.text()).isTrue();
        return (buffers.group(1) == null ? 0 : Long.parseLong(buffers.group(1)))
                + (buffers.group(2) == null ? 0 : Long.parseLong(buffers.group(2)));
    }

    private static PlanProbe.Plan explain(String statementSql, Object... parameters) throws SQLException {
        return PlanProbe.explain(db, statementSql, parameters);
    }

    private static void insertOverAggregates(int rows, int aggregates, String status) {
        PlanProbe.insertOverAggregates(db, settings, rows, aggregates, status);
    }
}
