package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The plans of the store's statements as they ran, and the backlogs the plan tests measure them on. */
final class PlanProbe {

    private static final Pattern PARAMETER = Pattern.compile("(?<!:):([a-zA-Z]+)");
    private static final Pattern TOP_ROWS = Pattern.compile("actual time=[0-9.]+\\.\\.[0-9.]+ rows=(\\d+)");
    static final Pattern SHARED = Pattern.compile("Buffers: shared(?: hit=(\\d+))?(?: read=(\\d+))?");

    private PlanProbe() {
    }

    /**
     * The statistics of an outbox in its steady state: 20,000 sent rows over 1,000 aggregates, analyzed, then purged.
     * What (auto)analyze last saw when a backlog builds up: almost no row pending.
     */
    static void statisticsOfSentRows(TestDatabase db, PostgresOutboxSettings settings) {
        insertOverAggregates(db, settings, 20_000, 1_000, "'sent'");
        db.execute("ANALYZE " + settings.qualifiedTable());
        db.execute("DELETE FROM " + settings.qualifiedTable());
    }

    /** {@code rows} rows with the given status, spread round-robin over {@code aggregates} aggregates. */
    static void insertOverAggregates(TestDatabase db, PostgresOutboxSettings settings, int rows, int aggregates,
                                     String status) {
        // Several transactions: each holds one write lock per aggregate until it commits (V2).
        for (int from = 1; from <= rows; from += 5_000) {
            db.execute("INSERT INTO " + settings.qualifiedTable()
                    + " (event_id, aggregate_type, aggregate_id, event_type, payload, status, sent_at)"
                    + " SELECT gen_random_uuid(), 'order', 'agg-' || (g % " + aggregates + "), 'created',"
                    + " decode(repeat('ab', 100), 'hex'), " + status + ", CASE WHEN " + status
                    + " = 'sent' THEN now() END FROM generate_series(" + from + ", " + Math.min(rows, from + 4_999) + ") g");
        }
    }

    /**
     * The statement with its named parameters written in as literals ({@code name, value} pairs; others ignored), every
     * one of them given.
     */
    static String withLiterals(String statementSql, Object... parameters) {
        String text = statementSql;
        for (int i = 0; i < parameters.length; i += 2) {
            String name = (String) parameters[i];
            String value = String.valueOf(parameters[i + 1]);
            text = PARAMETER.matcher(text).replaceAll(match -> Matcher.quoteReplacement(
                    match.group(1).equals(name) ? value : match.group()));
        }
        assertThat(PARAMETER.matcher(text).find()).as("every parameter written in: %s", text).isFalse();
        return text;
    }

    /** A plan as it ran: the text, the rows of its top node and the shared buffers it touched in all. */
    record Plan(String text, long rows, long buffers) {
    }

    /**
     * The statement's plan as it ran, under the store's planner settings, with its named parameters written in as
     * literals (others ignored); rolled back.
     */
    static Plan explain(TestDatabase db, String statementSql, Object... parameters) throws SQLException {
        String text = withLiterals(statementSql, parameters);
        StringBuilder plan = new StringBuilder();
        try (Connection connection = db.dataSource.getConnection()) {
            connection.setAutoCommit(false);
            try (Statement statement = connection.createStatement()) {
                // As the store runs it: kept to the indexes (IndexPlans).
                statement.executeQuery(IndexPlans.SETTINGS).close();
            }
            try (Statement statement = connection.createStatement();
                 ResultSet rs = statement.executeQuery("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + text)) {
                while (rs.next()) {
                    plan.append(rs.getString(1)).append('\n');
                }
            } finally {
                connection.rollback();
            }
        }
        // The top node comes first; the first Buffers line is its own, totalled over the whole plan.
        Matcher rows = TOP_ROWS.matcher(plan.toString().split("\n")[0]);
        Matcher buffers = SHARED.matcher(plan);
        assertThat(rows.find() && buffers.find()).as("top node and its buffers in %s", plan).isTrue();
        long shared = (buffers.group(1) == null ? 0 : Long.parseLong(buffers.group(1)))
                + (buffers.group(2) == null ? 0 : Long.parseLong(buffers.group(2)));
        return new Plan(plan.toString(), Long.parseLong(rows.group(1)), shared);
    }
}
