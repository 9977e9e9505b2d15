package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A held ordered claim against a model of the per-aggregate rule, over random tables: rows pending and due, in
 * backoff, parked, sent, or locked by another running transaction, over a few aggregates, in random order. A row may
 * be claimed only when every earlier unsent row of its aggregate that can hold it back (pending, or parked under
 * HOLD_AGGREGATE) is claimed with it; when all due rows fit in the claim's window, the claim takes exactly the first
 * {@code maxRows} such rows by sequence. Some tables also hold more rows in backoff (or parked) than the claim reads
 * to decide without looking each candidate's head up ({@link OutboxSql#OUTSIDE_EXACT_LIMIT}), so both ways are
 * checked.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class PostgresHeldOrderedClaimModelTest {

    private static TestDatabase db;
    private static PostgresOutboxSettings settings;
    private static OutboxStore store;

    @BeforeAll
    static void schema() {
        db = TestDatabase.withFreshSchema("claim_model");
        settings = db.settings().holdRowLocks(true).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        store = PostgresOutbox.store(db.dataSource, settings);
    }

    @AfterAll
    static void drop() {
        db.endHeldClaims();
        db.close();
    }

    @Test
    void smallTablesMatchTheModel() throws Exception {
        for (int seed = 1; seed <= 60; seed++) {
            trial(seed, 0);
        }
    }

    @Test
    void tablesWithMoreRowsInBackoffOrParkedThanTheClaimReadsMatchTheModel() throws Exception {
        for (int seed = 1001; seed <= 1012; seed++) {
            trial(seed, OutboxSql.OUTSIDE_EXACT_LIMIT + 1);
        }
    }

    /** One random table; {@code fillers} extra rows of aggregates of their own, in backoff or parked, written first. */
    private void trial(int seed, int fillers) throws Exception {
        Random random = new Random(seed);
        db.execute("TRUNCATE " + settings.qualifiedTable());
        ParkingPolicy policy = random.nextBoolean() ? ParkingPolicy.HOLD_AGGREGATE : ParkingPolicy.CONTINUE_AGGREGATE;
        int maxRows = 1 + random.nextInt(random.nextBoolean() ? 5 : 40);
        if (fillers > 0) {
            String status = seed % 2 == 0 ? "'parked'" : "'pending'";
            db.execute("INSERT INTO " + settings.qualifiedTable() + " (event_id, aggregate_type, aggregate_id, event_type,"
                    + " payload, status, next_attempt_at) SELECT gen_random_uuid(), 'filler', 'f-' || i, 'Filler', '\\x7b7d', "
                    + status + ", now() + interval '1 hour' FROM generate_series(1, " + fillers + ") i");
        }
        int aggregates = 2 + random.nextInt(12);
        int rows = 5 + random.nextInt(110);
        Map<UUID, Row> byId = new HashMap<>();
        StringBuilder values = new StringBuilder();
        for (int i = 0; i < rows; i++) {
            String aggregate = "a" + random.nextInt(aggregates);
            UUID id = UUID.randomUUID();
            int state = random.nextInt(100);
            String status = state < 62 ? "ready" : state < 74 ? "backoff" : state < 84 ? "parked" : state < 93 ? "sent" : "held";
            byId.put(id, new Row(id, aggregate, status));
            String column = switch (status) {
                case "parked" -> "'parked', now()";
                case "sent" -> "'sent', now()";
                case "backoff" -> "'pending', now() + interval '1 hour'";
                default -> "'pending', now()";
            };
            values.append(i == 0 ? "" : ", ").append("('").append(id).append("', 'order', '").append(aggregate)
                    .append("', 'E', '\\x7b7d', ").append(column).append(")");
        }
        // One statement: the writer's trigger gives each row its aggregate's order, and seq follows the list.
        db.execute("INSERT INTO " + settings.qualifiedTable() + " (event_id, aggregate_type, aggregate_id, event_type,"
                + " payload, status, next_attempt_at) VALUES " + values);
        List<Row> table = new ArrayList<>();
        for (UUID id : idsInSequenceOrder()) {
            table.add(byId.get(id));
        }
        List<UUID> heldIds = table.stream().filter(r -> r.status.equals("held")).map(Row::id).toList();
        try (Connection other = db.dataSource.getConnection()) {
            other.setAutoCommit(false);
            if (!heldIds.isEmpty()) {
                lock(other, heldIds);
            }
            ClaimBatch batch = store.claim(new ClaimRequest("model", maxRows, Duration.ofSeconds(30),
                    Ordering.PER_AGGREGATE, policy));
            List<UUID> claimed = batch.deliveries().stream().map(ClaimedDelivery::eventId).toList();
            if (!batch.isEmpty()) {
                store.release(batch.lease(), claimed);
            }
            other.rollback();

            String what = "seed " + seed + ", " + rows + " rows over " + aggregates + " aggregates, maxRows " + maxRows
                    + ", " + policy + ", fillers " + fillers + ": " + table;
            List<UUID> eligible = eligibleInOrder(table, policy);
            assertThat(claimed).as("claimed rows in sequence order, each allowed by the rule; " + what)
                    .isSubsetOf(eligible);
            Set<UUID> taken = new HashSet<>(claimed);
            Map<String, Boolean> gap = new HashMap<>();
            for (UUID id : eligible) {
                Row row = table.stream().filter(r -> r.id.equals(id)).findFirst().orElseThrow();
                if (taken.contains(id)) {
                    assertThat(gap.getOrDefault(row.aggregate, false))
                            .as("a claimed row whose earlier allowed sibling was left out; " + what).isFalse();
                } else {
                    gap.put(row.aggregate, true);
                }
            }
            int dueRows = (int) table.stream().filter(r -> r.status.equals("ready") || r.status.equals("held")).count();
            if (!eligible.isEmpty()) {
                assertThat(claimed).as("the first allowed row; " + what).contains(eligible.get(0));
            }
            // Looking each candidate's head up (many rows outside the window), a claim may come back short of what it
            // could take, and says so (ClaimBatch holdsBack): only the rule is checked then.
            if (fillers == 0 && dueRows <= OutboxSql.claimWindow(maxRows)) {
                assertThat(claimed).as("the first maxRows allowed rows; " + what)
                        .containsExactlyElementsOf(eligible.subList(0, Math.min(maxRows, eligible.size())));
            }
        }
    }

    /** The rows the rule allows, in sequence order: due and free, with no earlier row of the aggregate holding it back. */
    private static List<UUID> eligibleInOrder(List<Row> table, ParkingPolicy policy) {
        Set<String> blocked = new HashSet<>();
        List<UUID> eligible = new ArrayList<>();
        for (Row row : table) {
            if (blocked.contains(row.aggregate)) {
                continue;
            }
            switch (row.status) {
                case "ready" -> eligible.add(row.id);
                case "sent" -> { }
                case "parked" -> {
                    if (policy == ParkingPolicy.HOLD_AGGREGATE) {
                        blocked.add(row.aggregate);
                    }
                }
                default -> blocked.add(row.aggregate); // in backoff, or held by another transaction
            }
        }
        return eligible;
    }

    private List<UUID> idsInSequenceOrder() throws SQLException {
        List<UUID> ids = new ArrayList<>();
        try (Connection connection = db.dataSource.getConnection(); Statement statement = connection.createStatement();
             ResultSet rs = statement.executeQuery("SELECT event_id FROM " + settings.qualifiedTable()
                     + " WHERE aggregate_type = 'order' ORDER BY seq")) {
            while (rs.next()) {
                ids.add(rs.getObject(1, UUID.class));
            }
        }
        return ids;
    }

    private void lock(Connection other, List<UUID> ids) throws SQLException {
        StringBuilder list = new StringBuilder();
        for (UUID id : ids) {
            list.append(list.length() == 0 ? "" : ", ").append('\'').append(id).append('\'');
        }
        try (Statement statement = other.createStatement();
             ResultSet rs = statement.executeQuery("SELECT event_id FROM " + settings.qualifiedTable()
                     + " WHERE event_id IN (" + list + ") FOR UPDATE")) {
            int n = 0;
            while (rs.next()) {
                n++;
            }
            assertThat(n).isEqualTo(ids.size());
        }
    }

    private record Row(UUID id, String aggregate, String status) {
        @Override
        public String toString() {
            return aggregate + ":" + status;
        }
    }
}
