package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Review of a7cd527: statistics states under which a statement of the store still costs in proportion to the
 * backlog (shared buffers of {@code EXPLAIN (ANALYZE, BUFFERS)}, custom plans, rolled back).
 */
class PostgresStatisticsTrapReviewTest {

    private static final int BATCH = 100;

    private static TestDatabase db;
    private static PostgresOutboxSettings settings;
    private static OutboxSql sql;

    @BeforeAll
    static void schema() {
        db = TestDatabase.withFreshSchema("trap");
        settings = db.settings().build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        // Only our ANALYZE decides the statistics.
        db.execute("ALTER TABLE " + settings.qualifiedTable() + " SET (autovacuum_enabled = false)");
        sql = new OutboxSql(settings);
    }

    @AfterAll
    static void drop() {
        db.close();
    }

    @BeforeEach
    void empty() {
        db.execute("TRUNCATE " + settings.qualifiedTable());
    }

    // --------------------------------------------------------- 1. the changed claim, fresh statistics

    /**
     * Fresh statistics of an outbox whose backlog spans few aggregates (n_distinct of aggregate_id is small):
     * the held-back check, kept a correlated subplan by OFFSET 0, is planned as a Seq Scan of the whole table
     * per candidate. Before a7cd527 the same statement (anti-join) cost about 2,800 buffers either way.
     */
    @Test
    void withFreshStatisticsOverFiveAggregatesTheOrderedClaimCostsTheSameWhateverTheBacklog() throws Exception {
        long small = orderedClaimBuffersOverFewAggregates(2_000);
        long large = orderedClaimBuffersOverFewAggregates(20_000);

        assertThat(large).as("shared buffers of the ordered claim with 20,000 rows pending over 5 aggregates vs %d"
                + " with 2,000, freshly analyzed", small).isLessThan(small * 3 / 2);
    }

    private long orderedClaimBuffersOverFewAggregates(int pending) throws Exception {
        empty();
        insertOverAggregates(pending, 5, "'pending'");
        db.execute("ANALYZE " + settings.qualifiedTable());
        PlanProbe.Plan plan = explain(sql.claimOrdered, "maxRows", BATCH, "window", OutboxSql.claimWindow(BATCH),
                "parkedHolds", true, "owner", "'review'", "token", "'" + UUID.randomUUID() + "'::uuid",
                "leaseMicros", 30_000_000L);
        assertThat(plan.rows()).as("rows the claim returned: %s", plan.text()).isEqualTo(BATCH);
        return plan.buffers();
    }

    // --------------------------------------------------------- 2.-4. other statements, statistics of sent rows

    /** The held claim's parking of an undeliverable row: quadratic in the backlog under sent-row statistics. */
    @Test
    void withTheStatisticsOfATableOfSentRowsParkingAtClaimCostsTheSameWhateverTheBacklog() throws Exception {
        long small = buffersUnderStatisticsOfSentRows("parkHeld", 1_000);
        long large = buffersUnderStatisticsOfSentRows("parkHeld", 2_000);

        assertThat(large).as("shared buffers of parkHeld for 10 rows with 2,000 pending vs %d with 1,000,"
                + " the statistics taken on a table of sent rows", small).isLessThan(small * 3 / 2);
    }

    /** The outcome writes, the renewal, the held claim's lock and the next-due time, each per batch. */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"markSent", "release", "renew", "deleteSent", "park", "markSentHeld", "lockChosen",
            "timeUntilNextDue"})
    void withTheStatisticsOfATableOfSentRowsAStatementForTenRowsCostsTheSameWhateverTheBacklog(String statement)
            throws Exception {
        long small = buffersUnderStatisticsOfSentRows(statement, 2_000);
        long large = buffersUnderStatisticsOfSentRows(statement, 20_000);

        assertThat(large).as("shared buffers of %s with 20,000 rows pending vs %d with 2,000, the statistics"
                + " taken on a table of sent rows", statement, small).isLessThan(small * 3 / 2);
    }

    /** A table of sent rows, analyzed, purged, refilled with {@code pending} rows of which the last 10 are leased. */
    private long buffersUnderStatisticsOfSentRows(String statement, int pending) throws Exception {
        empty();
        PlanProbe.statisticsOfSentRows(db, settings);
        insertOverAggregates(pending, 1_000, "'pending'");
        UUID token = UUID.randomUUID();
        db.execute("UPDATE " + settings.qualifiedTable() + " SET lease_token = '" + token + "',"
                + " lease_owner = 'review', lease_until = now() - interval '1 second'"
                + " WHERE seq IN (SELECT seq FROM " + settings.qualifiedTable() + " ORDER BY seq DESC LIMIT 10)");
        List<String> ids = new ArrayList<>();
        try (Connection connection = db.dataSource.getConnection(); Statement st = connection.createStatement();
             ResultSet rs = st.executeQuery("SELECT event_id FROM " + settings.qualifiedTable()
                     + " WHERE lease_token = '" + token + "'")) {
            while (rs.next()) {
                ids.add(rs.getString(1));
            }
        }
        String idArray = "'{" + String.join(",", ids) + "}'::uuid[]";
        String reasons = "'{" + String.join(",", ids.stream().map(id -> "x").toList()) + "}'::text[]";
        String text = (String) OutboxSql.class.getDeclaredField(statement).get(sql);
        // Warm once (hint bits), then measure.
        explain(text, "ids", idArray, "reasons", reasons, "token", "'" + token + "'::uuid", "leaseMicros", 30_000_000L,
                "millis", "'30000'");
        return explain(text, "ids", idArray, "reasons", reasons, "token", "'" + token + "'::uuid",
                "leaseMicros", 30_000_000L, "millis", "'30000'").buffers();
    }

    // --------------------------------------------------------- helpers

    private static void insertOverAggregates(int rows, int aggregates, String status) {
        PlanProbe.insertOverAggregates(db, settings, rows, aggregates, status);
    }

    private static PlanProbe.Plan explain(String statementSql, Object... parameters) throws SQLException {
        return PlanProbe.explain(db, statementSql, parameters);
    }
}
