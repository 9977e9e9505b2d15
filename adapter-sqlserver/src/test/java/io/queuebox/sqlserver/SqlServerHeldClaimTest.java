package io.queuebox.sqlserver;

import static io.queuebox.sqlserver.Events.anEventFor;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.jdbc.testing.ReusingDataSource;
import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.OutboxWriter;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.ports.Reschedule;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.testcontainers.junit.jupiter.Testcontainers;

/**
 * What is particular to claims that hold their rows by update locks on SQL Server ({@code outbox.holdRowLocks}):
 * the fencing between claimers, the per-aggregate rule against a sibling another claimer holds, what a dead
 * connection and the store's own deadline free, and mixed lease and held relays. Skipped without Docker: none of
 * it has run against a real SQL Server yet.
 */
@Testcontainers(disabledWithoutDocker = true)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SqlServerHeldClaimTest {

    private static final String FIRST = "queuebox-held-first";
    private static final String SECOND = "queuebox-held-second";
    private static final Duration LONG_LEASE = Duration.ofMinutes(5);

    private TestDatabase db;
    private SqlServerOutboxSettings settings;
    private OutboxWriter<Connection> writer;
    private ReusingDataSource firstRelay;
    private ReusingDataSource secondRelay;
    private OutboxStore first;
    private OutboxStore second;

    @BeforeAll
    void schema() {
        db = TestDatabase.create("held");
        settings = db.settings().holdRowLocks(true).build();
        SqlServerOutbox.createSchema(db.dataSource, settings);
        writer = SqlServerOutbox.jdbcWriter(settings);
        firstRelay = TestDatabase.reusing(db.url, FIRST);
        secondRelay = TestDatabase.reusing(db.url, SECOND);
    }

    @BeforeEach
    void stores() {
        first = SqlServerOutbox.store(firstRelay, settings);
        second = SqlServerOutbox.store(secondRelay, settings);
    }

    @AfterEach
    void endClaims() {
        HeldClaim.abortAll(settings.qualifiedTable());
        db.execute("TRUNCATE TABLE " + settings.qualifiedTable());
    }

    @AfterAll
    void drop() {
        firstRelay.close();
        secondRelay.close();
        db.close();
    }

    @Test
    void twoOpenClaimsNeverShareARow() {
        List<OutboxEvent> events = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            events.add(anEventFor("aggregate-" + i));
        }
        write(events);

        ClaimBatch one = first.claim(request(4, LONG_LEASE));
        ClaimBatch other = second.claim(request(10, LONG_LEASE));

        assertThat(ids(one)).hasSize(4).doesNotContainAnyElementsOf(ids(other));
        Set<UUID> both = new HashSet<>(ids(one));
        both.addAll(ids(other));
        assertThat(both).containsExactlyInAnyOrderElementsOf(events.stream().map(OutboxEvent::eventId).toList());
        assertThat(first.stats().leased()).as("rows held by the claims of this process").isEqualTo(10);
    }

    @Test
    void aLaterSiblingIsNotClaimedWhileTheEarlierIsHeldByAnotherClaimer() {
        OutboxEvent a1 = anEventFor("A");
        OutboxEvent a2 = anEventFor("A");
        OutboxEvent b1 = anEventFor("B");
        write(List.of(a1, a2, b1));

        ClaimBatch holding = first.claim(request(1, LONG_LEASE));
        assertThat(ids(holding)).containsExactly(a1.eventId());

        ClaimBatch meanwhile = second.claim(request(10, LONG_LEASE));
        assertThat(ids(meanwhile)).as("A2 waits for A1").containsExactly(b1.eventId());
        assertThat(first.markSent(holding.lease(), ids(holding))).isEqualTo(1);
        // The claim that left A2 out may still hold an update lock on it until it ends (whether SQL Server keeps
        // the lock of a row its scan read and rejected is not pinned here): end it before claiming A2.
        assertThat(second.markSent(meanwhile.lease(), ids(meanwhile))).isEqualTo(1);
        assertThat(ids(second.claim(request(10, LONG_LEASE)))).containsExactly(a2.eventId());
    }

    /** An uncommitted retry of the earlier sibling is read as written (NOLOCK): the later one keeps waiting. */
    @Test
    void anEarlierSiblingRescheduledInAnOpenClaimStillHoldsTheLaterOneBack() {
        OutboxEvent a1 = anEventFor("A");
        OutboxEvent b1 = anEventFor("B");
        OutboxEvent a2 = anEventFor("A");
        write(List.of(a1, b1, a2));
        ClaimBatch holding = first.claim(request(2, LONG_LEASE));
        assertThat(ids(holding)).containsExactly(a1.eventId(), b1.eventId());

        assertThat(first.reschedule(holding.lease(), List.of(new Reschedule(a1.eventId(), Duration.ofMinutes(5),
                "broker down")))).isEqualTo(1);

        assertThat(second.claim(request(10, LONG_LEASE)).isEmpty()).as("A2 behind the retry, B1 held").isTrue();
    }

    /**
     * An uncommitted mark-sent of the earlier sibling is read as written (NOLOCK): it is written only after the
     * broker confirmed the row, so the later one may go. Should that claim roll back, A1 comes again: a duplicate
     * after A2, never A2 before A1's first delivery.
     */
    @Test
    void anEarlierSiblingMarkedSentInAnOpenClaimLetsTheLaterOneGo() {
        OutboxEvent a1 = anEventFor("A");
        OutboxEvent b1 = anEventFor("B");
        OutboxEvent a2 = anEventFor("A");
        write(List.of(a1, b1, a2));
        ClaimBatch holding = first.claim(request(2, LONG_LEASE));
        assertThat(first.markSent(holding.lease(), List.of(a1.eventId()))).isEqualTo(1);

        assertThat(ids(second.claim(request(10, LONG_LEASE)))).containsExactly(a2.eventId());
    }

    @Test
    void aClaimWhoseConnectionDiesFreesItsRowsAtOnce() {
        OutboxEvent a1 = anEventFor("A");
        OutboxEvent a2 = anEventFor("A");
        write(List.of(a1, a2));
        ClaimBatch dying = first.claim(request(10, LONG_LEASE));
        assertThat(ids(dying)).hasSize(2);
        assertThat(second.claim(request(10, LONG_LEASE)).isEmpty()).isTrue();

        killSessionsWithOpenTransactions(FIRST);

        ClaimBatch freed = second.claim(request(10, LONG_LEASE));
        assertThat(ids(freed)).containsExactly(a1.eventId(), a2.eventId());
        assertThat(freed.deliveries()).extracting(ClaimedDelivery::attempts).containsOnly(0);
        assertThat(first.markSent(dying.lease(), ids(dying))).as("the dead claim's outcome").isZero();
        assertThat(second.markSent(freed.lease(), ids(freed))).isEqualTo(2);
    }

    @Test
    void anOutcomeAfterTheDeadlineWritesNothing() throws Exception {
        OutboxEvent a1 = anEventFor("A");
        write(List.of(a1));
        ClaimBatch late = first.claim(request(10, Duration.ofMillis(500)));
        assertThat(ids(late)).containsExactly(a1.eventId());

        Thread.sleep(900);

        assertThat(first.markSent(late.lease(), ids(late))).isZero();
        assertThat(first.renew(late.lease(), LONG_LEASE)).isZero();
        ClaimBatch again = second.claim(request(10, LONG_LEASE));
        assertThat(ids(again)).as("pending, as it was").containsExactly(a1.eventId());
        assertThat(again.deliveries().get(0).attempts()).isZero();
    }

    /** Nobody speaks for a claim past its deadline: the store's timer ends it, and another relay takes the rows. */
    @Test
    void aClaimNobodySpeaksForEndsAtItsDeadline() {
        OutboxEvent a1 = anEventFor("A");
        write(List.of(a1));
        first.claim(request(10, Duration.ofMillis(500)));

        ClaimBatch taken = await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50))
                .until(() -> second.claim(request(10, LONG_LEASE)), batch -> !batch.isEmpty());

        assertThat(ids(taken)).containsExactly(a1.eventId());
    }

    @Test
    void anOutcomeRestartsTheDeadline() throws Exception {
        OutboxEvent a1 = anEventFor("A");
        OutboxEvent b1 = anEventFor("B");
        write(List.of(a1, b1));
        ClaimBatch batch = first.claim(request(10, Duration.ofSeconds(2)));
        Thread.sleep(1_400);
        assertThat(first.markSent(batch.lease(), List.of(a1.eventId()))).isEqualTo(1);
        Thread.sleep(1_400); // past the claim's first deadline, within the one its outcome restarted

        assertThat(second.claim(request(10, LONG_LEASE)).isEmpty()).isTrue();
        assertThat(first.markSent(batch.lease(), List.of(b1.eventId()))).isEqualTo(1);
        assertThat(first.stats().pending()).isZero();
    }

    /** SYSUTCDATETIME() is the outcome statement's time, not the claim's. */
    @Test
    void aRescheduledRowIsDueItsDelayAfterTheRescheduleNotAfterTheClaim() throws Exception {
        OutboxEvent a1 = anEventFor("A");
        write(List.of(a1));
        ClaimBatch batch = first.claim(request(10, LONG_LEASE));
        Thread.sleep(1_500);
        first.reschedule(batch.lease(), List.of(new Reschedule(a1.eventId(), Duration.ofSeconds(2), "broker down")));

        Optional<Duration> untilDue = first.timeUntilNextDue();
        assertThat(untilDue).hasValueSatisfying(d -> assertThat(d).isGreaterThan(Duration.ofMillis(1_000)));
    }

    /**
     * A leased relay and a held relay on one table (a rolling switch): the held claim's outcome clears the
     * expired lease's token, so the leased relay's late outcome is fenced.
     */
    @Test
    void aStaleLeasedOutcomeIsFencedAfterAHeldClaimWroteItsOutcome() throws Exception {
        OutboxStore leasing = SqlServerOutbox.store(db.dataSource, db.settings().build());
        OutboxEvent a1 = anEventFor("A");
        write(List.of(a1));
        ClaimBatch stale = leasing.claim(request(10, Duration.ofMillis(200)));
        assertThat(ids(stale)).containsExactly(a1.eventId());
        Thread.sleep(400);
        ClaimBatch fresh = first.claim(request(10, LONG_LEASE));
        assertThat(ids(fresh)).containsExactly(a1.eventId());
        assertThat(first.reschedule(fresh.lease(), List.of(new Reschedule(a1.eventId(), Duration.ofMinutes(5),
                "broker down")))).isEqualTo(1);

        assertThat(leasing.markSent(stale.lease(), List.of(a1.eventId()))).as("the stale leased outcome").isZero();
        assertThat(leasing.stats().pending()).isEqualTo(1);
    }

    @Test
    void aLiveLeaseIsNotTakenByAHeldClaim() {
        OutboxStore leasing = SqlServerOutbox.store(db.dataSource, db.settings().build());
        write(List.of(anEventFor("A")));
        assertThat(leasing.claim(request(10, LONG_LEASE)).size()).isEqualTo(1);

        assertThat(first.claim(request(10, LONG_LEASE)).isEmpty()).isTrue();
    }

    private void killSessionsWithOpenTransactions(String applicationName) {
        db.execute("DECLARE @kill nvarchar(max) = N'';"
                + " SELECT @kill = @kill + N'KILL ' + CAST(session_id AS nvarchar(10)) + N'; '"
                + " FROM sys.dm_exec_sessions WHERE program_name = N'" + applicationName + "'"
                + " AND open_transaction_count > 0 AND session_id <> @@SPID;"
                + " EXEC (@kill);");
    }

    private static ClaimRequest request(int maxRows, Duration lease) {
        return new ClaimRequest("relay-test", maxRows, lease, Ordering.PER_AGGREGATE, ParkingPolicy.HOLD_AGGREGATE);
    }

    private static List<UUID> ids(ClaimBatch batch) {
        return batch.deliveries().stream().map(ClaimedDelivery::eventId).toList();
    }

    private void write(List<OutboxEvent> events) {
        try (Connection connection = db.dataSource.getConnection()) {
            connection.setAutoCommit(false);
            writer.enqueueAll(connection, events);
            connection.commit();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
