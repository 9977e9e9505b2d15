package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

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
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The plans a relay's connection keeps from a quiet spell. An outbox is empty or nearly so most of the time (each row
 * is sent and purged soon after it is written), and a vacuum then truncates the table: PostgreSQL plans a statement it
 * has prepared on a table it believes empty with sequential scans, and keeps that generic plan until something
 * invalidates it (an ANALYZE, DDL, a new connection). When a backlog then builds, such a plan reads the whole table
 * for every step: an ordered claim of 40,000 rows took 17.4 s in psql, 15 ms after DISCARD PLANS. The store's
 * statements on the outbox must keep plans that go through its indexes, whatever the table held when they were made.
 *
 * <p>Not timed: the test reads the generic plans the relay's own connection holds, once the backlog is there.
 */
class PostgresPlansFromAnEmptyOutboxTest {

    private static final int QUIET_CLAIMS = 15;

    private TestDatabase db;
    private ReusingDataSource pool;

    @AfterEach
    void drop() {
        if (pool != null) {
            pool.close();
        }
        db.endHeldClaims();
        db.close();
    }

    @ParameterizedTest(name = "holdRowLocks={0}, {1}")
    @CsvSource({"true, PER_AGGREGATE", "true, NONE", "false, PER_AGGREGATE", "false, NONE"})
    void statementsPreparedOnAQuietOutboxKeepIndexPlansWhenABacklogBuilds(boolean holdRowLocks, Ordering ordering)
            throws SQLException {
        db = TestDatabase.withFreshSchema("emptyplans");
        PostgresOutboxSettings settings = db.settings().holdRowLocks(holdRowLocks).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        String table = settings.qualifiedTable();
        // No autoanalyze may come and invalidate the plans: it would hide the defect on a server that runs one.
        db.execute("ALTER TABLE " + table + " SET (autovacuum_enabled = false)");
        // Sent, purged and vacuumed: the table truncated to no page at all, as a quiet outbox's is.
        db.insertRow(settings, "seed", "OrderPlaced", "{}");
        db.execute("DELETE FROM " + table);
        db.execute("VACUUM (ANALYZE) " + table);

        pool = TestDatabase.reusing(TestServices.postgresUrl(), "empty-plans");
        OutboxStore store = PostgresOutbox.store(pool, settings);
        ClaimRequest request = new ClaimRequest("relay", 100, Duration.ofSeconds(30), ordering,
                ParkingPolicy.HOLD_AGGREGATE);
        // A trickle: one event at a time, each claimed, sent and purged, as a relay at low load goes.
        for (int i = 0; i < QUIET_CLAIMS; i++) {
            db.insertRow(settings, "agg-" + i, "OrderPlaced", "{}");
            ClaimBatch batch = store.claim(request);
            assertThat(batch.deliveries()).as("the trickle's event %d", i).hasSize(1);
            assertThat(store.markSent(batch.lease(), batch.deliveries().stream().map(ClaimedDelivery::eventId).toList()))
                    .isEqualTo(1);
            assertThat(store.claim(request).isEmpty()).as("nothing more after event %d", i).isTrue();
            store.timeUntilNextDue();
            assertThat(store.purgeSent(Duration.ZERO, 100)).isEqualTo(1);
        }

        // Then a backlog: a burst, or a broker outage while the service kept writing.
        PlanProbe.insertOverAggregates(db, settings, 20_000, 1_000, "'pending'");

        Map<String, String> scanning = faultyPlans(settings, plan -> plan.contains("Seq Scan on " + settings.table()));
        assertThat(scanning).as("statements on %s whose plan, kept from the quiet spell, reads the whole table",
                table).isEmpty();
        // Steps of a statement are materialized and have no index: a nested loop over two of them compares every row
        // of one with every row of the other (an ordered claim of 500 rows over as many aggregates: 250,000 times).
        Map<String, String> quadratic = faultyPlans(settings, PostgresPlansFromAnEmptyOutboxTest::loopsOverTwoSteps);
        assertThat(quadratic).as("statements on %s whose plan, kept from the quiet spell, joins two of its steps"
                + " in a nested loop", table).isEmpty();
    }

    /**
     * Whether a plan has a nested loop whose two inputs both read only results of WITH queries (a scan of one, or a
     * grouping, sort or union of such scans), never the table or an index.
     */
    static boolean loopsOverTwoSteps(String plan) {
        List<String> lines = plan.lines().toList();
        for (int i = 0; i < lines.size(); i++) {
            if (!lines.get(i).contains("Nested Loop")) {
                continue;
            }
            int depth = indent(lines.get(i));
            List<List<String>> inputs = new ArrayList<>();
            int inputDepth = -1;
            for (int j = i + 1; j < lines.size() && indent(lines.get(j)) > depth; j++) {
                String line = lines.get(j);
                boolean node = line.trim().startsWith("->");
                if (node && inputDepth < 0) {
                    inputDepth = indent(line);
                }
                if (node && indent(line) == inputDepth) {
                    inputs.add(new ArrayList<>());
                }
                if (node && !inputs.isEmpty()) {
                    inputs.get(inputs.size() - 1).add(line.trim());
                }
            }
            if (inputs.size() == 2 && inputs.stream().allMatch(PostgresPlansFromAnEmptyOutboxTest::readsOnlySteps)) {
                return true;
            }
        }
        return false;
    }

    /** Whether the nodes of one input read a WITH query's result and nothing else that holds rows. */
    private static boolean readsOnlySteps(List<String> nodes) {
        boolean step = nodes.stream().anyMatch(node -> node.startsWith("->  CTE Scan"));
        boolean other = nodes.stream().anyMatch(node -> node.contains(" Scan") && !node.startsWith("->  CTE Scan")
                && !node.startsWith("->  Subquery Scan"));
        return step && !other;
    }

    private static int indent(String line) {
        return line.length() - line.stripLeading().length();
    }

    /** The relay connection's prepared statements on the outbox whose generic plan is found faulty, with those plans. */
    private Map<String, String> faultyPlans(PostgresOutboxSettings settings, Predicate<String> faulty)
            throws SQLException {
        Map<String, String> found = new LinkedHashMap<>();
        int generic = 0;
        try (Connection connection = pool.getConnection(); Statement statement = connection.createStatement()) {
            List<String[]> prepared = new ArrayList<>();
            try (ResultSet rs = statement.executeQuery("SELECT name, statement, generic_plans + custom_plans,"
                    + " array_to_string(parameter_types::text[], ',') FROM pg_prepared_statements"
                    + " WHERE statement LIKE '%" + settings.qualifiedTable() + "%'")) {
                while (rs.next()) {
                    prepared.add(new String[] {rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4)});
                }
            }
            assertThat(prepared).as("the relay's statements, prepared on its connection").isNotEmpty();
            // The plan the connection holds, as it was made: forcing the generic plan reuses the cached one.
            statement.execute("SET plan_cache_mode = force_generic_plan");
            for (String[] each : prepared) {
                if (Integer.parseInt(each[2]) < 6) {
                    continue; // PostgreSQL makes a generic plan from the sixth execution on
                }
                generic++;
                String arguments = each[3] == null || each[3].isEmpty() ? ""
                        : "(" + String.join(", ", java.util.Arrays.stream(each[3].split(","))
                                .map(type -> "NULL::" + type).toList()) + ")";
                StringBuilder plan = new StringBuilder();
                try (ResultSet rs = statement.executeQuery("EXPLAIN EXECUTE \"" + each[0] + "\"" + arguments)) {
                    while (rs.next()) {
                        plan.append(rs.getString(1)).append('\n');
                    }
                }
                if (faulty.test(plan.toString())) {
                    found.put(each[1], plan.toString());
                }
            }
            statement.execute("RESET plan_cache_mode");
        }
        assertThat(generic).as("statements run often enough on the connection to have a generic plan").isPositive();
        return found;
    }
}
