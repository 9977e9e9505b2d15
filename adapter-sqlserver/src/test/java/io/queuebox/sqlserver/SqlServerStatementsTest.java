package io.queuebox.sqlserver;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.Park;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.ports.ReplaySelector;
import io.queuebox.ports.Reschedule;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The dialect's SQL text and parameter binding, rendered for a schema and table; no database needed. */
class SqlServerStatementsTest {

    private static final SqlServerOutboxSettings SETTINGS =
            SqlServerOutboxSettings.builder().schema("Sales").table("order_outbox").build();
    private static final String TABLE = "[Sales].[order_outbox]";
    private static final Pattern NAMED = Pattern.compile("(?<![:\\w]):([A-Za-z][A-Za-z0-9]*)");
    private static final LeaseToken TOKEN = LeaseToken.random();
    private static final UUID ID = UUID.randomUUID();

    private final StoreCalls calls = new StoreCalls(SETTINGS);

    @ParameterizedTest
    @EnumSource(SqlServerStatements.class)
    void everyStatementRendersWithBracketQuotedNamesAndNoPostgresSyntax(SqlServerStatements statement) {
        String sql = statement.render(SETTINGS);
        assertThat(sql).doesNotContain("{table}", "{captureState}", "\"");
        switch (statement.group()) {
            case WRITER, STORE -> {
                if (statement != SqlServerStatements.HELD_ALIVE) {
                    assertThat(sql).contains(TABLE);
                }
            }
            case CAPTURE_STATE -> assertThat(sql).contains("[Sales].[queuebox_capture_state]");
            case LOCK, INSPECTOR -> assertThat(sql).doesNotContain(TABLE, "queuebox_capture_state");
        }
        String upper = sql.toUpperCase();
        assertThat(upper).doesNotContain("NOW()", " LIMIT ", "FOR UPDATE", "SKIP LOCKED", "RETURNING", "::",
                "ANY(", "INTERVAL");
        if (upper.matches("(?s).*\\b(UPDATE|DELETE)\\b.*") && !upper.startsWith("MERGE")) {
            assertThat(sql).as("an update or delete always has a condition or a TOP").containsAnyOf("WHERE", "TOP (");
        }
    }

    @Test
    void theOrderedClaimLocksSkipsLockedRowsGuardsGapsAndReturnsRowsInOneBatch() {
        String sql = SqlServerStatements.CLAIM_ORDERED.render(SETTINGS);
        assertThat(sql)
                .contains("SET NOCOUNT ON; SET XACT_ABORT ON;")
                .contains("DECLARE @now datetime2(7) = SYSUTCDATETIME();")
                .contains("BEGIN TRANSACTION;")
                .contains("SELECT TOP (@maxRows) o.event_id")
                .contains("FROM " + TABLE + " o WITH (UPDLOCK, ROWLOCK, READPAST)")
                .contains("ORDER BY o.seq;")
                .contains("DELETE c FROM @candidates c WHERE EXISTS (SELECT 1 FROM " + TABLE + " e WITH (NOLOCK)")
                .contains("AND NOT EXISTS (SELECT 1 FROM @candidates x WHERE x.event_id = e.event_id)")
                .contains("OUTPUT inserted.seq, inserted.event_id, inserted.aggregate_type")
                .contains("inserted.headers, inserted.created_at, inserted.attempts, inserted.last_error")
                .endsWith("COMMIT TRANSACTION;");
        // The gaps step counts every earlier pending row, ready or not, and parked ones only when they hold.
        assertThat(sql).contains("AND (e.status = 'pending' OR (e.status = 'parked' AND @parkedHolds = 1))");
        assertThat(sql.indexOf("INSERT INTO @candidates")).isLessThan(sql.indexOf("DELETE c FROM @candidates"));
        assertThat(sql.indexOf("DELETE c FROM @candidates")).isLessThan(sql.indexOf("UPDATE u SET"));
    }

    /**
     * Issue 11 on SQL Server: the database does not make a later writer of an aggregate wait (no BEFORE
     * trigger can take a lock before IDENTITY draws seq). The claim holds the later row back instead: both
     * sibling checks read {@code WITH (NOLOCK)}, so they see the uncommitted earlier row of another open
     * transaction without waiting for it, and the gaps step counts every earlier pending row that is not
     * among the candidates, whether it is ready or not. A check that read with READPAST (or under snapshot
     * isolation) would not see that row and would let the later one overtake it.
     */
    @Test
    void theOrderedClaimsSiblingChecksSeeAnUncommittedEarlierRowOfTheAggregate() {
        String sql = SqlServerStatements.CLAIM_ORDERED.render(SETTINGS);
        List<String> siblingReads = new ArrayList<>();
        Matcher reads = Pattern.compile(Pattern.quote(TABLE) + " e WITH \\(([A-Z, ]+)\\)").matcher(sql);
        while (reads.find()) {
            siblingReads.add(reads.group(1));
        }
        assertThat(siblingReads).as("hints of the reads of earlier rows (alias e)").containsExactly("NOLOCK", "NOLOCK");
        assertThat(sql).doesNotContainPattern(Pattern.quote(TABLE) + " e(?! WITH \\(NOLOCK\\))");
        String gaps = sql.substring(sql.indexOf("DELETE c FROM @candidates c"), sql.indexOf("UPDATE u SET"));
        assertThat(gaps)
                .contains("e.aggregate_type = c.aggregate_type AND e.aggregate_id = c.aggregate_id AND e.seq < c.seq")
                .contains("AND (e.status = 'pending' OR (e.status = 'parked' AND @parkedHolds = 1))")
                .doesNotContain("next_attempt_at", "lease_until", "READPAST");
        assertThat(sql).doesNotContain("SNAPSHOT", "READ COMMITTED");
    }

    @Test
    void theUnorderedClaimIsOneStatement() {
        String sql = SqlServerStatements.CLAIM_UNORDERED.render(SETTINGS);
        assertThat(sql).startsWith("WITH candidates AS (SELECT TOP (:maxRows) * FROM " + TABLE
                + " WITH (UPDLOCK, ROWLOCK, READPAST)");
        assertThat(sql).contains("ORDER BY seq)").contains("UPDATE candidates SET").contains("OUTPUT inserted.seq");
        assertThat(sql).doesNotContain("BEGIN TRANSACTION", "NOLOCK");
    }

    /**
     * The held ordered claim chooses as the leased one (the same locking read and gaps step), and probes the head
     * of each candidate's aggregate for a lock another claim holds (a held row has no lease to show it); it runs
     * in the transaction the store keeps open, and writes nothing on the rows.
     */
    @Test
    void theHeldOrderedClaimChoosesAsTheLeasedOneAndWritesNoLease() {
        String leased = SqlServerStatements.CLAIM_ORDERED.render(SETTINGS);
        String held = SqlServerStatements.CLAIM_ORDERED_HELD.render(SETTINGS);
        String firstStep = leased.substring(leased.indexOf("INSERT INTO @candidates"), leased.indexOf(" ORDER BY o.seq;"));
        String gaps = leased.substring(leased.indexOf(" DELETE c FROM @candidates"), leased.indexOf(" UPDATE u SET"));
        assertThat(held).contains(firstStep + SqlServerStatements.Held.HEAD_NOT_HELD_ELSEWHERE.replace("{table}", TABLE)
                        + " ORDER BY o.seq;" + gaps + SqlServerStatements.Held.LOCK_BY_KEY.replace("{table}", TABLE)
                        + " SELECT ")
                .contains(" UPDATE c SET locked = 1 FROM @candidates c JOIN " + TABLE
                        + " o WITH (UPDLOCK, ROWLOCK, READPAST, FORCESEEK) ON o.event_id = c.event_id"
                        + " WHERE o.status = 'pending';")
                .contains(" DELETE c FROM @candidates c WHERE EXISTS (SELECT 1 FROM @candidates u WHERE u.locked = 0"
                        + " AND u.aggregate_type = c.aggregate_type AND u.aggregate_id = c.aggregate_id"
                        + " AND u.seq <= c.seq);")
                .contains(" FROM " + TABLE + " h WITH (NOLOCK)")
                .contains(" AND h.status = 'pending' ORDER BY h.seq) head WHERE NOT EXISTS (SELECT 1 FROM " + TABLE
                        + " x WITH (UPDLOCK, ROWLOCK, READPAST, FORCESEEK) WHERE x.event_id = head.event_id))")
                .contains("FROM " + TABLE + " o WITH (UPDLOCK, ROWLOCK, READPAST)")
                .contains("DELETE c FROM @candidates c WHERE EXISTS (SELECT 1 FROM " + TABLE + " e WITH (NOLOCK)")
                .endsWith(" SELECT o.seq, o.event_id, o.aggregate_type, o.aggregate_id, o.event_type, o.destination,"
                        + " o.payload, o.content_type, o.headers, o.created_at, o.attempts, o.last_error"
                        + " FROM @candidates c JOIN " + TABLE + " o WITH (FORCESEEK) ON o.event_id = c.event_id"
                        + " ORDER BY o.seq;");
        assertThat(held).doesNotContain("BEGIN TRANSACTION", "COMMIT", "ROLLBACK", "OUTPUT", ":token",
                ":owner", "lease_token =", "lease_until =", "@leaseSeconds", "SNAPSHOT", "READ COMMITTED");
        assertThat(held.split("UPDATE ", -1)).as("the only UPDATE writes the table variable").hasSize(2);
        assertThat(held).doesNotContainPattern("UPDATE (u|o|\\[Sales])");
        List<String> siblingReads = new ArrayList<>();
        Matcher reads = Pattern.compile(Pattern.quote(TABLE) + " e WITH \\(([A-Z, ]+)\\)").matcher(held);
        while (reads.find()) {
            siblingReads.add(reads.group(1));
        }
        assertThat(siblingReads).as("the sibling checks read what others lock").containsExactly("NOLOCK", "NOLOCK");
    }

    @Test
    void theHeldUnorderedClaimLocksSkipsLockedRowsAndWritesNoLease() {
        String sql = SqlServerStatements.CLAIM_UNORDERED_HELD.render(SETTINGS);
        assertThat(sql).startsWith("SELECT TOP (:maxRows) seq, event_id, aggregate_type")
                .contains(" FROM " + TABLE + " WITH (UPDLOCK, ROWLOCK, READPAST)")
                .contains("WHERE status = 'pending' AND next_attempt_at <= SYSUTCDATETIME()"
                        + " AND (lease_until IS NULL OR lease_until <= SYSUTCDATETIME())")
                .endsWith("ORDER BY seq");
        assertThat(sql).doesNotContain("UPDATE", "OUTPUT", "BEGIN TRANSACTION", "NOLOCK", "lease_token");
    }

    @Test
    void heldOutcomesSeekTheirRowsByIdClearTheLeaseColumnsAndNameNoToken() {
        for (SqlServerStatements statement : List.of(SqlServerStatements.MARK_SENT_HELD,
                SqlServerStatements.DELETE_SENT_HELD, SqlServerStatements.RESCHEDULE_HELD,
                SqlServerStatements.PARK_HELD)) {
            String sql = statement.render(SETTINGS);
            assertThat(sql).as(statement.name()).containsPattern("JOIN \\[Sales]\\.\\[order_outbox] o WITH \\(FORCESEEK\\)"
                    + " ON o\\.event_id = [jr]\\.id WHERE o\\.status = 'pending'$");
            assertThat(sql).as(statement.name()).doesNotContain(":token", "lease_token =  :", "COMMIT", "READPAST");
            if (statement != SqlServerStatements.DELETE_SENT_HELD) {
                assertThat(sql).as(statement.name()).contains("lease_token = NULL, lease_until = NULL");
            }
        }
        // The same writes as the leased outcomes, without the token fence.
        assertThat(SqlServerStatements.MARK_SENT_HELD.render(SETTINGS)).isEqualTo(SqlServerStatements.MARK_SENT
                .render(SETTINGS).replace(" WHERE o.lease_token = :token AND", " WHERE"));
        assertThat(SqlServerStatements.RESCHEDULE_HELD.render(SETTINGS)).isEqualTo(SqlServerStatements.RESCHEDULE
                .render(SETTINGS).replace(" WHERE o.lease_token = :token AND", " WHERE"));
        assertThat(SqlServerStatements.PARK_HELD.render(SETTINGS)).isEqualTo(SqlServerStatements.PARK
                .render(SETTINGS).replace(" WHERE o.lease_token = :token AND", " WHERE"));
        assertThat(SqlServerStatements.DELETE_SENT_HELD.render(SETTINGS)).isEqualTo(SqlServerStatements.DELETE_SENT
                .render(SETTINGS).replace(" WHERE o.lease_token = :token AND", " WHERE"));
    }

    @Test
    void theHeldCallsBindNoOwnerTokenOrLease() {
        SqlCall ordered = calls.claimHeld(new ClaimRequest("relay-1", 7, Duration.ofSeconds(30), Ordering.PER_AGGREGATE,
                ParkingPolicy.CONTINUE_AGGREGATE));
        assertThat(ordered.statement()).isEqualTo(SqlServerStatements.CLAIM_ORDERED_HELD);
        assertThat(ordered.parameters()).containsExactlyInAnyOrderEntriesOf(Map.of("maxRows", 7, "parkedHolds", false));
        SqlCall unordered = calls.claimHeld(new ClaimRequest("relay-1", 7, Duration.ofSeconds(30), Ordering.NONE,
                ParkingPolicy.HOLD_AGGREGATE));
        assertThat(unordered.statement()).isEqualTo(SqlServerStatements.CLAIM_UNORDERED_HELD);
        assertThat(unordered.parameters()).containsExactlyInAnyOrderEntriesOf(Map.of("maxRows", 7));
        assertThat(calls.markSentHeld(List.of(ID)).parameters()).containsExactlyInAnyOrderEntriesOf(
                Map.of("ids", "[\"" + ID + "\"]"));
        assertThat(calls.timeUntilNextDueHeld(List.of()).parameters()).containsEntry("held", "[]");
        assertThat(SqlServerStatements.TIME_UNTIL_NEXT_DUE_HELD.render(SETTINGS))
                .startsWith(SqlServerStatements.TIME_UNTIL_NEXT_DUE.render(SETTINGS))
                .endsWith(" AND event_id NOT IN (SELECT j.id FROM OPENJSON(:held) WITH (id uniqueidentifier '$') j)");
        assertThat(SqlServerStatements.HELD_ALIVE.render(SETTINGS)).isEqualTo("SELECT @@TRANCOUNT AS open_transactions");
    }

    @Test
    void heldStatementsQuoteTheConfiguredNames() {
        SqlServerOutboxSettings pascal = SqlServerOutboxSettings.builder().schema("Billing").table("InvoiceOutbox")
                .holdRowLocks(true).build();
        for (SqlServerStatements statement : List.of(SqlServerStatements.CLAIM_ORDERED_HELD,
                SqlServerStatements.CLAIM_UNORDERED_HELD, SqlServerStatements.MARK_SENT_HELD,
                SqlServerStatements.DELETE_SENT_HELD, SqlServerStatements.RESCHEDULE_HELD, SqlServerStatements.PARK_HELD,
                SqlServerStatements.TIME_UNTIL_NEXT_DUE_HELD)) {
            String sql = statement.render(pascal);
            assertThat(sql).as(statement.name()).contains("[Billing].[InvoiceOutbox]")
                    .doesNotContain("Billing.InvoiceOutbox", "{table}");
        }
    }

    @Test
    void purgeIsBoundedOldestFirstAndSkipsLockedRows() {
        String sql = SqlServerStatements.PURGE_SENT.render(SETTINGS);
        assertThat(sql).contains("SELECT TOP (:maxRows) event_id FROM " + TABLE + " WITH (ROWLOCK, READPAST)")
                .contains("WHERE status = 'sent' AND sent_at < ").contains("ORDER BY sent_at)")
                .endsWith("DELETE FROM oldest");
    }

    @Test
    void fencedUpdatesNameTheLeaseTokenAndOnlyTouchPendingRows() {
        for (SqlServerStatements statement : List.of(SqlServerStatements.MARK_SENT, SqlServerStatements.DELETE_SENT,
                SqlServerStatements.RESCHEDULE, SqlServerStatements.PARK, SqlServerStatements.RELEASE,
                SqlServerStatements.RENEW)) {
            assertThat(statement.render(SETTINGS)).as(statement.name())
                    .containsPattern("lease_token = :token AND (o\\.)?status = 'pending'");
        }
        assertThat(SqlServerStatements.RESCHEDULE.render(SETTINGS))
                .contains("OPENJSON(:retries) WITH (id uniqueidentifier '$.id', seconds int '$.seconds',"
                        + " micros int '$.micros', reason nvarchar(max) '$.reason')");
        assertThat(SqlServerStatements.MARK_SENT.render(SETTINGS))
                .contains("FROM OPENJSON(:ids) WITH (id uniqueidentifier '$') j JOIN " + TABLE
                        + " o WITH (FORCESEEK) ON o.event_id = j.id");
    }

    @Test
    void everyStatementThatChangesRowsByIdOrTokenSeeksInsteadOfScanning() {
        for (SqlServerStatements statement : List.of(SqlServerStatements.MARK_SENT, SqlServerStatements.DELETE_SENT,
                SqlServerStatements.RESCHEDULE, SqlServerStatements.PARK, SqlServerStatements.RELEASE,
                SqlServerStatements.RENEW, SqlServerStatements.REPLAY_BY_EVENT_IDS, SqlServerStatements.CLAIM_ORDERED)) {
            assertThat(statement.render(SETTINGS)).as(statement.name()).containsPattern("\\[order_outbox] [ou] WITH \\(FORCESEEK\\)");
        }
        // Reads that must not wait for a transaction still inserting rows skip locked rows instead.
        assertThat(SqlServerStatements.TIME_UNTIL_NEXT_DUE.render(SETTINGS)).contains(TABLE + " WITH (READPAST)");
        assertThat(SqlServerStatements.STATS.render(SETTINGS)).contains(TABLE + " WITH (READPAST)");
    }

    @Test
    void everyStoreCallBindsExactlyTheParametersItsStatementNames() {
        ClaimRequest ordered = new ClaimRequest("relay-1", 50, Duration.ofSeconds(30, 250_000), Ordering.PER_AGGREGATE,
                ParkingPolicy.CONTINUE_AGGREGATE);
        ClaimRequest unordered = new ClaimRequest("relay-1", 50, Duration.ofSeconds(30), Ordering.NONE,
                ParkingPolicy.HOLD_AGGREGATE);
        List<SqlCall> all = List.of(calls.claim(ordered, TOKEN), calls.claim(unordered, TOKEN),
                calls.markSent(TOKEN, List.of(ID)), new StoreCalls(SqlServerOutboxSettings.builder().schema("Sales")
                        .table("order_outbox").deleteOnSend(true).build()).markSent(TOKEN, List.of(ID)),
                calls.reschedule(TOKEN, List.of(new Reschedule(ID, Duration.ofMillis(1500), "timeout"))),
                calls.park(TOKEN, List.of(new Park(ID, "rejected"))), calls.release(TOKEN, List.of(ID)),
                calls.renew(TOKEN, Duration.ofMinutes(1)), calls.timeUntilNextDue(),
                calls.purgeSent(Duration.ofDays(7), 1000), calls.stats(),
                calls.parked(ReplaySelector.events(Set.of(ID)), 10), calls.parked(ReplaySelector.aggregate("order", "1"), 10),
                calls.parked(ReplaySelector.allParked(), 10), calls.parked(ReplaySelector.events(Set.of(ID)), 10, 2048),
                calls.parked(ReplaySelector.aggregate("order", "1"), 10, 2048), calls.parked(ReplaySelector.allParked(), 10, 0),
                calls.replay(ReplaySelector.events(Set.of(ID))),
                calls.replay(ReplaySelector.aggregate("order", "1")), calls.replay(ReplaySelector.allParked()),
                calls.claimHeld(ordered), calls.claimHeld(unordered), calls.markSentHeld(List.of(ID)),
                new StoreCalls(SqlServerOutboxSettings.builder().schema("Sales").table("order_outbox")
                        .deleteOnSend(true).holdRowLocks(true).build()).markSentHeld(List.of(ID)),
                calls.rescheduleHeld(List.of(new Reschedule(ID, Duration.ofMillis(1500), "timeout"))),
                calls.parkHeld(List.of(new Park(ID, "rejected"))), calls.heldAlive(),
                calls.timeUntilNextDueHeld(List.of(ID)));
        Set<SqlServerStatements> seen = new LinkedHashSet<>();
        for (SqlCall call : all) {
            seen.add(call.statement());
            assertThat(call.sql()).isEqualTo(call.statement().render(SETTINGS));
            assertThat(call.parameters().keySet()).as(call.statement().name()).isEqualTo(namedParameters(call.sql()));
            call.parameters().values().forEach(value -> assertThat(value)
                    .isInstanceOfAny(String.class, Integer.class, Long.class, Boolean.class));
        }
        assertThat(seen).as("every store statement has a call").containsAll(List.of(SqlServerStatements.values())
                .stream().filter(s -> s.group() == SqlServerStatements.Group.STORE).toList());
    }

    @Test
    void theClaimBindsTheLeaseAsSecondsAndMicrosAndTheTokenAsText() {
        SqlCall call = calls.claim(new ClaimRequest("relay-1", 7, Duration.ofSeconds(30, 250_000_000),
                Ordering.PER_AGGREGATE, ParkingPolicy.HOLD_AGGREGATE), TOKEN);
        assertThat(call.parameters()).containsExactlyInAnyOrderEntriesOf(Map.of("maxRows", 7, "owner", "relay-1",
                "token", TOKEN.value().toString(), "leaseSeconds", 30, "leaseMicros", 250_000, "parkedHolds", true));
    }

    @Test
    void idListsAndRowListsTravelAsJsonForOpenJson() {
        UUID other = UUID.randomUUID();
        assertThat(calls.release(TOKEN, List.of(ID, other)).parameters().get("ids"))
                .isEqualTo("[\"" + ID + "\",\"" + other + "\"]");
        assertThat(calls.reschedule(TOKEN, List.of(new Reschedule(ID, Duration.ofMillis(2_500), "said \"no\"")))
                .parameters().get("retries"))
                .isEqualTo("[{\"id\":\"" + ID + "\",\"seconds\":2,\"micros\":500000,\"reason\":\"said \\\"no\\\"\"}]");
        assertThat(calls.park(TOKEN, List.of(new Park(ID, "bad"))).parameters().get("parkings"))
                .isEqualTo("[{\"id\":\"" + ID + "\",\"reason\":\"bad\"}]");
    }

    @Test
    void durationsBeyondWhatDateaddTakesAreCapped() {
        Duration huge = Duration.ofDays(365L * 1000);
        assertThat(StoreCalls.seconds(huge)).isEqualTo(Integer.MAX_VALUE);
        assertThat(StoreCalls.microsOfSecond(huge)).isZero();
        assertThat(StoreCalls.seconds(Duration.ofMillis(1_001))).isEqualTo(1);
        assertThat(StoreCalls.microsOfSecond(Duration.ofMillis(1_001))).isEqualTo(1_000);
        assertThat(calls.purgeSent(huge, 10).parameters()).containsEntry("retentionSeconds", Integer.MAX_VALUE);
    }

    @Test
    void captureStateCallsBindTheirParameters() {
        SqlServerCaptureStateStore store = new SqlServerCaptureStateStore(Jdbi.create("jdbc:sqlserver://unused"), SETTINGS);
        CaptureIdentity identity = new CaptureIdentity("relay-1");
        CaptureFingerprint fp = new CaptureFingerprint("dbo_t", "", "dbo", "t", "host", "db");
        List<SqlCall> all = List.of(store.call(SqlServerStatements.CAPTURE_STATE_FIND_ALL, Map.of()),
                store.call(SqlServerStatements.CAPTURE_STATE_FIND, Map.of("identity", identity.value())),
                store.call(SqlServerStatements.CAPTURE_STATE_RECORD_START, Map.of("identity", identity.value(),
                        "mode", "sqlserver-cdc", "fingerprint", fp.encode())),
                store.call(SqlServerStatements.CAPTURE_STATE_RECORD_STATUS, Map.of("identity", identity.value(),
                        "state", "RUNNING", "reason", "x")),
                store.call(SqlServerStatements.CAPTURE_STATE_FORGET, Map.of("identity", identity.value())));
        for (SqlCall call : all) {
            assertThat(call.parameters().keySet()).as(call.statement().name()).isEqualTo(namedParameters(call.sql()));
        }
        assertThat(SqlServerStatements.CAPTURE_STATE_RECORD_START.render(SETTINGS))
                .startsWith("MERGE INTO [Sales].[queuebox_capture_state] WITH (HOLDLOCK) AS target");
    }

    @Test
    void theLockAndTheInspectorUsePositionalParametersOnly() {
        assertThat(SqlServerStatements.LOCK_ACQUIRE.template())
                .contains("sys.sp_getapplock @Resource = ?, @LockMode = 'Exclusive', @LockOwner = 'Session',"
                        + " @LockTimeout = 0");
        assertThat(SqlServerStatements.LOCK_IS_HELD.template()).contains("APPLOCK_MODE('public', ?, 'Session')");
        assertThat(SqlServerStatements.LOCK_RELEASE.template()).contains("@LockOwner = 'Session'");
        assertThat(SqlServerStatements.INSPECT_DATABASE_CDC.template()).contains("sys.databases", "is_cdc_enabled");
        assertThat(SqlServerStatements.INSPECT_TABLE_CDC.template()).contains("is_tracked_by_cdc")
                .contains("s.name = ? AND t.name = ?");
        for (SqlServerStatements statement : SqlServerStatements.values()) {
            if (statement.group() == SqlServerStatements.Group.LOCK
                    || statement.group() == SqlServerStatements.Group.INSPECTOR) {
                assertThat(namedParameters(statement.template())).as(statement.name()).isEmpty();
            }
        }
        assertThat(SqlServerCaptureLock.resource(new CaptureIdentity("a".repeat(64))).length()).isLessThanOrEqualTo(255);
    }

    @Test
    void theInspectorsSentencesSayHowToFixWhatTheyName() {
        CaptureFingerprint fp = new CaptureFingerprint("dbo_queuebox_outbox", "", "dbo", "queuebox_outbox", "h", "shop");
        assertThat(SqlServerCaptureSourceInspector.Problems.databaseCdcDisabled("shop"))
                .contains("database 'shop'").contains("EXEC sys.sp_cdc_enable_db");
        assertThat(SqlServerCaptureSourceInspector.Problems.tableCdcDisabled("shop", fp))
                .contains("dbo.queuebox_outbox")
                .contains("EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'queuebox_outbox',"
                        + " @role_name = NULL, @capture_instance = N'dbo_queuebox_outbox'");
        assertThat(SqlServerCaptureSourceInspector.Problems.tableMissing("shop", fp))
                .contains("does not exist").contains("classpath:db/queuebox/sqlserver");
        assertThat(SqlServerCaptureSourceInspector.Problems.agentNotRunning("Stopped"))
                .contains("'Stopped'").contains("start SQL Server Agent");
        assertThat(SqlServerCaptureSourceInspector.Problems.AGENT_UNKNOWN).contains("GRANT VIEW SERVER STATE");
    }

    /** The Jdbi named parameters of a statement, outside string literals. */
    static Set<String> namedParameters(String sql) {
        Matcher matcher = NAMED.matcher(sql.replaceAll("'[^']*'", "''"));
        List<String> names = new ArrayList<>();
        while (matcher.find()) {
            names.add(matcher.group(1));
        }
        return new LinkedHashSet<>(names);
    }
}
