package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.Park;
import io.queuebox.ports.ParkingPolicy;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * An empty ordered claim says whether it found due rows it could not take while rows are in flight (ClaimBatch
 * heldElsewhere): every aggregate's head in another claim's batch. The engine then polls less often. Only then:
 * not when nothing is due, nor when the due rows wait behind a parked head or a head in backoff with nothing in
 * flight (nobody's claim ends that, and polling less would delay new rows). Leased claims and held ones alike.
 */
class PostgresClaimHeldElsewhereTest {

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private OutboxStore store;

    private void schema(boolean holdRowLocks) {
        db = TestDatabase.withFreshSchema("heldelsewhere");
        settings = db.settings().holdRowLocks(holdRowLocks).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        store = PostgresOutbox.store(db.dataSource, settings);
    }

    @AfterEach
    void drop() {
        if (db != null) {
            db.endHeldClaims();
            db.close();
        }
    }

    private ClaimBatch claim(int maxRows, Ordering ordering) {
        return store.claim(new ClaimRequest("held-elsewhere-test", maxRows, Duration.ofSeconds(30), ordering,
                ParkingPolicy.HOLD_AGGREGATE));
    }

    private UUID insert(String aggregateId) {
        return db.insertRow(settings, aggregateId, "created", "{}");
    }

    private static List<UUID> ids(ClaimBatch batch) {
        return batch.deliveries().stream().map(ClaimedDelivery::eventId).toList();
    }

    @ParameterizedTest(name = "holdRowLocks {0}")
    @ValueSource(booleans = {false, true})
    void aClaimThatFindsEveryHeadInAnotherBatchSaysSo(boolean holdRowLocks) {
        schema(holdRowLocks);
        UUID a1 = insert("a");
        UUID b1 = insert("b");
        insert("a");
        insert("b");

        ClaimBatch first = claim(2, Ordering.PER_AGGREGATE);
        assertThat(ids(first)).containsExactly(a1, b1);
        assertThat(first.heldElsewhere()).isFalse();

        ClaimBatch second = claim(10, Ordering.PER_AGGREGATE);
        assertThat(second.isEmpty()).as("a2 and b2 wait behind a1 and b1").isTrue();
        assertThat(second.heldElsewhere()).isTrue();

        store.markSent(first.lease(), ids(first));
        ClaimBatch third = claim(10, Ordering.PER_AGGREGATE);
        assertThat(third.size()).as("a2 and b2, their heads sent").isEqualTo(2);
        assertThat(third.heldElsewhere()).isFalse();
        store.markSent(third.lease(), ids(third));
    }

    /**
     * Two batches in flight hold every row of a smaller claim's window (four times its batch): the due rows past the
     * window, each behind a head in flight, count.
     */
    @org.junit.jupiter.api.Test
    void aWindowHeldWholeByBatchesInFlightStillSaysSo() {
        schema(true);
        PlanProbe.insertOverAggregates(db, settings, 1_200, 600, "'pending'");
        ClaimBatch first = claim(300, Ordering.PER_AGGREGATE);
        ClaimBatch second = claim(300, Ordering.PER_AGGREGATE);
        assertThat(first.size() + second.size()).as("the head of every aggregate").isEqualTo(600);

        ClaimBatch third = claim(100, Ordering.PER_AGGREGATE);
        assertThat(third.isEmpty()).isTrue();
        assertThat(third.heldElsewhere()).as("a window of 400 heads in flight, 600 due rows behind them").isTrue();
        store.markSent(first.lease(), ids(first));
        store.markSent(second.lease(), ids(second));
    }

    /**
     * A later round of a held claim, after an earlier one locked a row and cut it behind a sibling another claim still
     * holds, says held elsewhere: the row waits on that claim, which looks again itself once its outcome is written.
     * Read only as held, the cut row was in flight or not depending on whether a transaction that began after this
     * claim had finished by then (its own transaction id is never in its snapshot's running list), so the claim said
     * so, or not, by the commits of others.
     */
    @org.junit.jupiter.api.Test
    void aLaterRoundWhoseRowWaitsOnAnotherClaimSaysSoWhateverOthersCommitted() throws Exception {
        schema(true);
        UUID a1 = insert("a");
        UUID a2 = insert("a");
        String choose = chooseTaking(a2);
        try (OtherClaims others = new OtherClaims(); Connection claim = db.dataSource.getConnection()) {
            others.lock(a1);
            claim.setAutoCommit(false);
            lock(claim, a2);

            boolean first = saysHeldElsewhere(claim, choose);
            db.execute("SELECT pg_current_xact_id()"); // begins after the claim, and commits
            boolean second = saysHeldElsewhere(claim, choose);
            claim.rollback();
            ClaimBatch after = claim(10, Ordering.PER_AGGREGATE);

            assertThat(List.of(first, second)).as("held elsewhere, before and after another transaction committed")
                    .containsExactly(true, true);
            assertThat(after.isEmpty()).as("a2 still waits on a1 once the claim ended").isTrue();
            assertThat(after.heldElsewhere()).isTrue();
        }
    }

    /**
     * Reviews (helper-16, helper-17): the sibling a later round's row was cut behind was sent between the choice and the
     * lock. The row, and the row behind it, wait on this claim alone and are claimable once it ends: a row in flight
     * elsewhere, of another aggregate, must not make the empty claim say held elsewhere (its relay would poll up to 16
     * times less often).
     */
    @org.junit.jupiter.api.Test
    void aRowBehindACutRowFreedAtTheEndIsNotHeldElsewhere() throws Exception {
        schema(true);
        UUID a1 = insert("a");
        UUID a2 = insert("a");
        UUID a3 = insert("a");
        UUID z1 = insert("z");
        try (OtherClaims others = new OtherClaims()) {
            others.lock(z1);
            sendNow(a1);

            boolean saysHeld = laterRoundSaysHeldElsewhere(a2, () -> { });

            assertThat(ids(claim(10, Ordering.PER_AGGREGATE))).as("a2 and a3, claimable once the claim ended")
                    .containsExactly(a2, a3);
            assertThat(saysHeld).as("the empty claim said held elsewhere").isFalse();
        }
    }

    /**
     * Review (helper-16): the sibling was taken by another claim first, which sent it and ended before this claim's
     * next round; a row of another aggregate is in flight elsewhere.
     */
    @org.junit.jupiter.api.Test
    void aRowCutBehindASiblingWhoseClaimEndedIsNotHeldElsewhere() throws Exception {
        schema(true);
        UUID a1 = insert("a");
        UUID a2 = insert("a");
        UUID z1 = insert("z");
        try (OtherClaims others = new OtherClaims()) {
            others.lock(z1);
            Connection first = others.lock(a1);

            boolean saysHeld = laterRoundSaysHeldElsewhere(a2, () -> {
                try (Statement statement = first.createStatement()) {
                    statement.executeUpdate("UPDATE " + settings.qualifiedTable()
                            + " SET status = 'sent', sent_at = clock_timestamp() WHERE event_id = '" + a1 + "'");
                }
                first.commit();
            });

            assertThat(ids(claim(10, Ordering.PER_AGGREGATE))).as("a2, claimable once the claim ended")
                    .containsExactly(a2);
            assertThat(saysHeld).as("the empty claim said held elsewhere").isFalse();
        }
    }

    /**
     * Review (helper-18): the sibling the cut row waits behind went into backoff, or was parked under HOLD_AGGREGATE,
     * meanwhile: the row is not freed when the claim ends, and b2 still waits on b1, in flight elsewhere.
     */
    @ParameterizedTest(name = "sibling {0}")
    @ValueSource(strings = {"backoff", "parked"})
    void aCutRowBehindASiblingInBackoffOrParkedIsNotFreedAtTheEnd(String how) throws Exception {
        schema(true);
        UUID a1 = insert("a");
        UUID a2 = insert("a");
        UUID b1 = insert("b");
        insert("b");
        try (OtherClaims others = new OtherClaims()) {
            others.lock(b1);
            db.execute("UPDATE " + settings.qualifiedTable() + " SET "
                    + (how.equals("backoff") ? "next_attempt_at = now() + interval '1 hour'" : "status = 'parked'")
                    + " WHERE event_id = '" + a1 + "'");

            boolean saysHeld = laterRoundSaysHeldElsewhere(a2, () -> { });

            ClaimBatch after = claim(10, Ordering.PER_AGGREGATE);
            assertThat(after.isEmpty()).as("a2 waits on a1 (" + how + "), b2 on b1 in flight").isTrue();
            assertThat(after.heldElsewhere()).as("the same state once the claim ended").isTrue();
            assertThat(saysHeld).as("the empty later round said held elsewhere").isTrue();
        }
    }

    /** Something done while a claim holds its earlier round's row, before its later round. */
    private interface Meanwhile {
        void run() throws SQLException;
    }

    /**
     * A later round of a held claim whose earlier round locked {@code taken} (and kept nothing): whether it said held
     * elsewhere. The claim then ends, freeing {@code taken}.
     */
    private boolean laterRoundSaysHeldElsewhere(UUID taken, Meanwhile meanwhile) throws SQLException {
        try (Connection claim = db.dataSource.getConnection()) {
            claim.setAutoCommit(false);
            lock(claim, taken);
            meanwhile.run();
            boolean says = saysHeldElsewhere(claim, chooseTaking(taken));
            claim.rollback();
            return says;
        }
    }

    /** Claims of other relays: each holds the row it locked, in a transaction of its own, until closed. */
    private final class OtherClaims implements AutoCloseable {
        private final List<Connection> open = new java.util.ArrayList<>();

        Connection lock(UUID eventId) throws SQLException {
            Connection connection = db.dataSource.getConnection();
            open.add(connection);
            connection.setAutoCommit(false);
            PostgresClaimHeldElsewhereTest.this.lock(connection, eventId);
            return connection;
        }

        @Override
        public void close() throws SQLException {
            for (Connection connection : open) {
                connection.rollback();
                connection.close();
            }
        }
    }

    private void sendNow(UUID eventId) {
        db.execute("UPDATE " + settings.qualifiedTable() + " SET status = 'sent', sent_at = now() WHERE event_id = '"
                + eventId + "'");
    }

    /** The held ordered choice of a later round, its earlier rounds having locked {@code taken}. */
    private String chooseTaking(UUID taken) {
        return PlanProbe.withLiterals(new OutboxSql(settings).chooseOrdered, "maxRows", 10, "window",
                OutboxSql.claimWindow(10), "parkedHolds", true, "taken", "'{" + taken + "}'::uuid[]", "millis", "'30000'");
    }

    private void lock(Connection connection, UUID eventId) throws SQLException {
        try (Statement statement = connection.createStatement()) {
            statement.executeQuery("SELECT 1 FROM " + settings.qualifiedTable() + " WHERE event_id = '" + eventId
                    + "' FOR UPDATE").close();
        }
    }

    /** Runs the choice; whether it returned only the marker row. */
    private static boolean saysHeldElsewhere(Connection connection, String choose) throws SQLException {
        List<Boolean> markers = new java.util.ArrayList<>();
        try (Statement statement = connection.createStatement(); ResultSet rows = statement.executeQuery(choose)) {
            while (rows.next()) {
                markers.add(rows.getObject("event_id") == null && rows.getBoolean("held_elsewhere"));
            }
        }
        return markers.equals(List.of(true));
    }

    @ParameterizedTest(name = "holdRowLocks {0}")
    @ValueSource(booleans = {false, true})
    void anIdleClaimDoesNotSaySo(boolean holdRowLocks) {
        schema(holdRowLocks);
        ClaimBatch idle = claim(10, Ordering.PER_AGGREGATE);
        assertThat(idle.isEmpty()).isTrue();
        assertThat(idle.heldElsewhere()).isFalse();

        UUID a1 = insert("a");
        ClaimBatch first = claim(10, Ordering.PER_AGGREGATE);
        assertThat(ids(first)).containsExactly(a1);
        ClaimBatch nothingDue = claim(10, Ordering.PER_AGGREGATE);
        assertThat(nothingDue.isEmpty()).isTrue();
        assertThat(nothingDue.heldElsewhere()).as("a row in flight, but nothing else due").isFalse();
        store.markSent(first.lease(), ids(first));
    }

    @ParameterizedTest(name = "holdRowLocks {0}")
    @ValueSource(booleans = {false, true})
    void rowsBehindAParkedHeadAreNotHeldElsewhere(boolean holdRowLocks) {
        schema(holdRowLocks);
        UUID a1 = insert("a");
        insert("a");
        ClaimBatch first = claim(1, Ordering.PER_AGGREGATE);
        assertThat(ids(first)).containsExactly(a1);
        store.park(first.lease(), List.of(new Park(a1, "poison")));

        ClaimBatch behindParked = claim(10, Ordering.PER_AGGREGATE);
        assertThat(behindParked.isEmpty()).as("a2 waits behind the parked a1").isTrue();
        assertThat(behindParked.heldElsewhere()).isFalse();
    }

    @ParameterizedTest(name = "holdRowLocks {0}")
    @ValueSource(booleans = {false, true})
    void rowsBehindAHeadInBackoffAreNotHeldElsewhere(boolean holdRowLocks) {
        schema(holdRowLocks);
        UUID a1 = insert("a");
        insert("a");
        db.execute("UPDATE " + settings.qualifiedTable() + " SET next_attempt_at = now() + interval '1 hour'"
                + " WHERE event_id = '" + a1 + "'");

        ClaimBatch behindBackoff = claim(10, Ordering.PER_AGGREGATE);
        assertThat(behindBackoff.isEmpty()).as("a2 waits behind a1's retry").isTrue();
        assertThat(behindBackoff.heldElsewhere()).isFalse();
    }

    /**
     * The marker's lookups run only for a claim that took nothing: a 500-row claim of 20,000 rows does not pay for
     * them (PostgreSQL orders a WHERE's conditions by cost, hence a CASE).
     */
    @ParameterizedTest(name = "holdRowLocks {0}")
    @ValueSource(booleans = {false, true})
    void aClaimThatTakesRowsNeverRunsTheMarkersLookups(boolean holdRowLocks) throws Exception {
        schema(holdRowLocks);
        PlanProbe.insertOverAggregates(db, settings, 20_000, 1_000, "'pending'");
        db.execute("ANALYZE " + settings.qualifiedTable());
        OutboxSql sql = new OutboxSql(settings);
        PlanProbe.Plan plan = PlanProbe.explain(db, holdRowLocks ? sql.chooseOrdered : sql.claimOrdered, "maxRows", 500,
                "window", OutboxSql.claimWindow(500), "parkedHolds", true, "owner", "'plan-test'",
                "token", "'" + UUID.randomUUID() + "'::uuid", "leaseMicros", 30_000_000L, "taken", "'{}'::uuid[]",
                "millis", "'30000'");
        assertThat(plan.rows()).isEqualTo(500);

        List<String> lines = List.of(plan.text().split("\n"));
        int marker = -1;
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains("One-Time Filter: CASE WHEN")) {
                marker = i;
            }
        }
        assertThat(marker).as("the marker's filter in %s", plan.text()).isPositive();
        int depth = indent(lines.get(marker));
        List<String> scans = new java.util.ArrayList<>();
        for (int i = marker + 1; i < lines.size() && indent(lines.get(i)) >= depth; i++) {
            if (lines.get(i).contains(" Scan ") && lines.get(i).contains("queuebox_outbox")) {
                scans.add(lines.get(i).trim());
            }
        }
        assertThat(scans).as("the marker's lookups").isNotEmpty().allMatch(line -> line.endsWith("(never executed)"));
    }

    private static int indent(String line) {
        int i = 0;
        while (i < line.length() && line.charAt(i) == ' ') {
            i++;
        }
        return i;
    }

    @ParameterizedTest(name = "holdRowLocks {0}")
    @ValueSource(booleans = {false, true})
    void anUnorderedClaimNeverSaysSo(boolean holdRowLocks) {
        schema(holdRowLocks);
        insert("a");
        ClaimBatch first = claim(1, Ordering.NONE);
        assertThat(first.size()).isEqualTo(1);
        ClaimBatch second = claim(10, Ordering.NONE);
        assertThat(second.isEmpty()).isTrue();
        assertThat(second.heldElsewhere()).isFalse();
        store.markSent(first.lease(), ids(first));
    }
}
