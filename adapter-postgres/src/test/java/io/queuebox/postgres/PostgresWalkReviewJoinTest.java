package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.SQLException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Review of 1a18243 (the held ordered choice's walk of its window as a grouping of the blocked rows joined to the
 * window, instead of a window function). The join's two inputs are both results of WITH queries (win, and a grouping
 * of win and outside): nothing bounds a nested loop between them but the planner's estimates, and under the
 * statistics of a table of sent rows (an outbox's steady state when a backlog builds) it estimates one row each.
 * Statement run as the store runs it (IndexPlans settings), parameters as literals, rolled back.
 */
class PostgresWalkReviewJoinTest {

    private static final int BATCH = 500;
    private static final Pattern JOIN_FILTER = Pattern.compile("Rows Removed by Join Filter: (\\d+)");
    private static final Pattern EXECUTION = Pattern.compile("Execution Time: ([0-9.]+) ms");

    static final String OLD_WALK = "SELECT m.event_id, m.seq, m.aggregate_type, m.aggregate_id, NULL::bigint AS head_seq, true AS proven"
            + " FROM (SELECT x.*, bool_or(x.blocked) OVER (PARTITION BY x.aggregate_type, x.aggregate_id ORDER BY x.seq)"
            + " AS cut FROM (SELECT w.event_id, w.seq, w.aggregate_type, w.aggregate_id, w.blocked FROM win w"
            + " UNION ALL SELECT NULL::uuid, o.seq, o.aggregate_type, o.aggregate_id, true FROM outside o) x) m"
            + " WHERE NOT m.cut AND (SELECT yes FROM exact)";

    private static TestDatabase db;
    private static PostgresOutboxSettings settings;
    private static OutboxSql sql;

    @BeforeAll
    static void schema() {
        db = TestDatabase.withFreshSchema("walkjoin");
        settings = db.settings().holdRowLocks(true).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
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

    /**
     * A backlog after a broker trouble: 1,000 aggregates whose head is in backoff (retried later), then 4,000 due
     * rows over other aggregates; the statistics are those of a table of sent rows. A batch of 500 walks a window of
     * 2,000 rows against the 1,000 blocked aggregates.
     */
    @Test
    void underSentRowStatisticsTheWalkDoesNotCompareEveryWindowRowWithEveryBlockedAggregate() throws SQLException {
        PlanProbe.statisticsOfSentRows(db, settings);
        insert(1_000, "late-", "now() + interval '1 hour'");
        insert(4_000, "due-", "now()");

        String changed = sql.chooseOrdered;
        assertThat(changed).contains(OutboxSql.HELD_WALK);
        String before = changed.replace(OutboxSql.HELD_WALK, OLD_WALK);

        PlanProbe.Plan oldPlan = explain(before);
        PlanProbe.Plan newPlan = explain(changed);
        oldPlan = explain(before);
        newPlan = explain(changed);

        assertThat(newPlan.rows()).as("rows chosen, as before the change").isEqualTo(oldPlan.rows());
        long removed = joinFilterRemoved(newPlan.text());
        assertThat(PostgresPlansFromAnEmptyOutboxTest.loopsOverTwoSteps(newPlan.text()))
                .as("the choice joins two of its steps in a nested loop (%d rows removed by its join filter; %s ms"
                                + " against %s ms before the change): %s", removed, time(newPlan.text()),
                        time(oldPlan.text()), newPlan.text())
                .isFalse();
    }

    private static void insert(int rows, String prefix, String nextAttemptAt) {
        db.execute("INSERT INTO " + settings.qualifiedTable()
                + " (event_id, aggregate_type, aggregate_id, event_type, payload, next_attempt_at)"
                + " SELECT gen_random_uuid(), 'order', '" + prefix + "' || g, 'created', decode(repeat('ab', 100), 'hex'), "
                + nextAttemptAt + " FROM generate_series(1, " + rows + ") g");
    }

    private static PlanProbe.Plan explain(String statement) throws SQLException {
        return PlanProbe.explain(db, statement, "maxRows", BATCH, "window", OutboxSql.claimWindow(BATCH),
                "parkedHolds", true, "millis", "'30000'", "taken", "'{}'::uuid[]");
    }

    static long joinFilterRemoved(String plan) {
        Matcher m = JOIN_FILTER.matcher(plan);
        long max = 0;
        while (m.find()) {
            max = Math.max(max, Long.parseLong(m.group(1)));
        }
        return max;
    }

    static String time(String plan) {
        Matcher m = EXECUTION.matcher(plan);
        return m.find() ? m.group(1) : "?";
    }
}
