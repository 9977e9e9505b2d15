package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Review of 1a18243: the held ordered choice (chooseOrdered) before and after the change, run side by side on the same
 * snapshot (one REPEATABLE READ transaction) over random outboxes: rows due, in backoff, parked, sent, held by another
 * running transaction, taken by "earlier rounds" (:taken), few aggregates spelled in several cases, small windows and
 * batches, both parking policies, with a deterministic and a nondeterministic (case-insensitive) aggregate_id.
 */
class PostgresWalkReviewDifferentialTest {

    /** Random outboxes per collation: the review ran 300 each; 100 keep the check at about a minute. */
    private static final int ITERATIONS = 100;

    private TestDatabase db;
    private PostgresOutboxSettings settings;

    @AfterEach
    void drop() {
        if (db != null) {
            db.endHeldClaims();
            db.close();
        }
    }

    @ParameterizedTest(name = "case-insensitive aggregate_id {0}")
    @ValueSource(booleans = {false, true})
    void theChoiceIsTheSameAsBeforeTheChange(boolean caseInsensitive) throws SQLException {
        db = TestDatabase.withFreshSchema("walkdiff");
        settings = db.settings().holdRowLocks(true).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        if (caseInsensitive) {
            db.caseInsensitiveAggregateIds(settings);
        }
        String changed = new OutboxSql(settings).chooseOrdered;
        assertThat(changed).contains(OutboxSql.HELD_WALK);
        String before = changed.replace(OutboxSql.HELD_WALK, PostgresWalkReviewJoinTest.OLD_WALK);
        String t = settings.qualifiedTable();
        Random random = new Random(caseInsensitive ? 7 : 11);
        String[] ids = {"A-1", "a-1", "A-2", "a-2", "B", "b", "C"};
        int compared = 0;
        int nonEmpty = 0;
        for (int iteration = 0; iteration < ITERATIONS; iteration++) {
            db.execute("TRUNCATE " + t);
            int rows = 1 + random.nextInt(30);
            List<UUID> all = new ArrayList<>();
            StringBuilder values = new StringBuilder();
            for (int i = 0; i < rows; i++) {
                UUID id = UUID.randomUUID();
                all.add(id);
                String status = switch (random.nextInt(8)) {
                    case 0 -> "parked";
                    case 1 -> "sent";
                    default -> "pending";
                };
                String next = random.nextInt(5) == 0 ? "now() + interval '1 hour'" : "now() - interval '1 second'";
                values.append(values.length() == 0 ? "" : ", ").append("('").append(id).append("', '")
                        .append(random.nextInt(6) == 0 ? "x" : "order").append("', '").append(ids[random.nextInt(ids.length)])
                        .append("', 'e', '\\x7b7d', '").append(status).append("', ").append(next).append(", ")
                        .append(status.equals("sent") ? "now()" : "NULL").append(")");
            }
            // One statement: the writers' trigger (V2) draws each row's seq in the order the rows are listed.
            db.execute("INSERT INTO " + t + " (event_id, aggregate_type, aggregate_id, event_type, payload, status,"
                    + " next_attempt_at, sent_at) VALUES " + values);
            List<UUID> heldByOther = new ArrayList<>();
            List<UUID> taken = new ArrayList<>();
            for (UUID id : all) {
                int r = random.nextInt(8);
                if (r == 0) {
                    heldByOther.add(id);
                } else if (r == 1) {
                    taken.add(id);
                }
            }
            try (Connection other = db.dataSource.getConnection()) {
                other.setAutoCommit(false);
                if (!heldByOther.isEmpty()) {
                    try (Statement s = other.createStatement()) {
                        s.executeQuery("SELECT 1 FROM " + t + " WHERE event_id IN (" + quoted(heldByOther) + ") FOR UPDATE")
                                .close();
                    }
                }
                int maxRows = 1 + random.nextInt(6);
                int window = 1 + random.nextInt(12);
                boolean parkedHolds = random.nextBoolean();
                String takenArray = "'{" + String.join(",", taken.stream().map(UUID::toString).toList()) + "}'::uuid[]";
                Object[] parameters = {"maxRows", maxRows, "window", window, "parkedHolds", parkedHolds,
                        "millis", "'30000'", "taken", takenArray};
                try (Connection c = db.dataSource.getConnection()) {
                    c.setAutoCommit(false);
                    c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
                    List<String> oldChoice = chosen(c, PlanProbe.withLiterals(before, parameters));
                    List<String> newChoice = chosen(c, PlanProbe.withLiterals(changed, parameters));
                    c.rollback();
                    assertThat(newChoice).as("iteration %d: %s, held elsewhere %s, taken %s, table %s", iteration,
                            java.util.Arrays.toString(parameters), heldByOther, taken, dump(t)).isEqualTo(oldChoice);
                    compared++;
                    if (!newChoice.isEmpty()) {
                        nonEmpty++;
                    }
                }
                other.rollback();
            }
        }
        assertThat(compared).isEqualTo(ITERATIONS);
        assertThat(nonEmpty).as("random outboxes where the choice took rows").isGreaterThan(ITERATIONS / 2);
    }

    private static List<String> chosen(Connection c, String statement) throws SQLException {
        List<String> out = new ArrayList<>();
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(statement)) {
            while (rs.next()) {
                out.add(rs.getString("event_id") + "/" + rs.getBoolean("behind") + "/" + rs.getBoolean("held_elsewhere"));
            }
        }
        return out;
    }

    private static String quoted(List<UUID> ids) {
        return String.join(",", ids.stream().map(id -> "'" + id + "'").toList());
    }

    private String dump(String t) throws SQLException {
        StringBuilder out = new StringBuilder();
        try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT seq, event_id, aggregate_type, aggregate_id, status,"
                     + " next_attempt_at > now() FROM " + t + " ORDER BY seq")) {
            while (rs.next()) {
                out.append('\n').append(rs.getLong(1)).append(' ').append(rs.getString(2)).append(' ')
                        .append(rs.getString(3)).append(' ').append(rs.getString(4)).append(' ').append(rs.getString(5))
                        .append(rs.getBoolean(6) ? " backoff" : "");
            }
        }
        return out.toString();
    }
}
