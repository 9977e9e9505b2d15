package io.queuebox.sqlserver;

import static io.queuebox.sqlserver.Events.anEventFor;
import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.OutboxWriter;
import io.queuebox.ports.Park;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.ports.ReplaySelector;
import io.queuebox.jdbc.testing.ReusingDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.SqlLogger;
import org.jdbi.v3.core.statement.StatementContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.testcontainers.junit.jupiter.Testcontainers;

/**
 * What is particular to the SQL of the SQL Server store: round trips per call, the READPAST ordering guard
 * against a concurrent claimer's lock, purge and delete-on-send. The shared semantics are the contract's.
 */
@Testcontainers(disabledWithoutDocker = true)
class SqlServerOutboxStoreSqlTest {

    private static final Duration LEASE = Duration.ofMinutes(5);

    private static TestDatabase db;
    private static SqlServerOutboxSettings settings;
    private static OutboxWriter<Connection> writer;
    private static final AtomicInteger statements = new AtomicInteger();
    private static OutboxStore store;
    private static ReusingDataSource relay;

    @BeforeAll
    static void schema() {
        db = TestDatabase.create("store");
        settings = db.settings().build();
        SqlServerOutbox.createSchema(db.dataSource, settings);
        writer = SqlServerOutbox.jdbcWriter(settings);
        relay = TestDatabase.reusing(db.url, "queuebox-relay");
        Jdbi jdbi = Jdbi.create(relay);
        jdbi.setSqlLogger(new SqlLogger() {
            @Override
            public void logAfterExecution(StatementContext context) {
                statements.incrementAndGet();
            }
        });
        store = SqlServerOutbox.store(jdbi, settings);
    }

    @AfterAll
    static void drop() {
        relay.close();
        db.close();
    }

    @BeforeEach
    void empty() {
        db.execute("TRUNCATE TABLE " + settings.qualifiedTable());
    }

    @Test
    void aCappedParkedReadByAggregateAndOfAllRowsCutsThePayloadInTheDatabase() {
        OutboxEvent event = anEventFor("capped");
        write(List.of(event));
        ClaimBatch batch = store.claim(request(10, ParkingPolicy.HOLD_AGGREGATE));
        store.park(batch.lease(), List.of(new Park(event.eventId(), "too large")));
        int whole = event.payload().length;

        for (ReplaySelector selector : List.of(ReplaySelector.aggregate(event.aggregateType(), event.aggregateId()),
                ReplaySelector.allParked())) {
            List<io.queuebox.ports.ParkedEvent> capped = store.parked(selector, 10, 4);

            assertThat(capped).singleElement().satisfies(row -> {
                assertThat(row.event().payload()).containsExactly(java.util.Arrays.copyOf(event.payload(), 4));
                assertThat(row.payloadBytes()).isEqualTo(whole);
                assertThat(row.event().eventId()).isEqualTo(event.eventId());
            });
        }
    }

    @Test
    void aBatchOf500IsOneRoundTripToClaimAndOneToMarkSent() {
        List<OutboxEvent> events = new ArrayList<>();
        for (int i = 0; i < 500; i++) {
            events.add(anEventFor("aggregate-" + (i % 50)));
        }
        write(events);

        statements.set(0);
        ClaimBatch batch = store.claim(request(500, ParkingPolicy.HOLD_AGGREGATE));
        int claimStatements = statements.getAndSet(0);
        int marked = store.markSent(batch.lease(), ids(batch));
        int markStatements = statements.get();

        assertThat(batch.size()).isEqualTo(500);
        assertThat(ids(batch)).containsExactlyElementsOf(events.stream().map(OutboxEvent::eventId).toList());
        assertThat(marked).isEqualTo(500);
        assertThat(claimStatements).isEqualTo(1);
        assertThat(markStatements).isEqualTo(1);
    }

    @Test
    void aLaterRowIsNotClaimedWhileAConcurrentClaimerLocksItsEarlierSibling() throws SQLException {
        OutboxEvent a1 = anEventFor("A");
        OutboxEvent a2 = anEventFor("A");
        OutboxEvent b1 = anEventFor("B");
        write(List.of(a1, a2, b1));

        // A claimer in the middle of its claim holds the update lock on A1 and has not yet written its lease.
        try (Connection other = db.dataSource.getConnection()) {
            other.setAutoCommit(false);
            try (Statement statement = other.createStatement()) {
                statement.execute("SELECT 1 FROM " + settings.qualifiedTable() + " WITH (UPDLOCK, ROWLOCK)"
                        + " WHERE event_id = '" + a1.eventId() + "'");
            }
            ClaimBatch whileLocked = store.claim(request(10, ParkingPolicy.HOLD_AGGREGATE));
            assertThat(ids(whileLocked)).containsExactly(b1.eventId());
            other.rollback();
        }

        ClaimBatch afterwards = store.claim(request(10, ParkingPolicy.HOLD_AGGREGATE));
        assertThat(ids(afterwards)).containsExactly(a1.eventId(), a2.eventId());
    }

    @Test
    void aLaterRowIsNotClaimedWhileAnEarlierRowOfItsAggregateIsBeingWritten() throws SQLException {
        OutboxEvent b1 = anEventFor("B");
        try (Connection application = db.dataSource.getConnection()) {
            application.setAutoCommit(false);
            OutboxEvent a1 = anEventFor("A");
            writer.enqueue(application, a1);
            OutboxEvent a2 = anEventFor("A");
            write(List.of(a2, b1));

            // The uncommitted A1 neither blocks the claim nor lets A2 overtake it.
            assertThat(ids(store.claim(request(10, ParkingPolicy.HOLD_AGGREGATE)))).containsExactly(b1.eventId());
            application.commit();
            assertThat(ids(store.claim(request(10, ParkingPolicy.HOLD_AGGREGATE))))
                    .containsExactly(a1.eventId(), a2.eventId());
        }
    }

    /**
     * Issue 11 with an application that inserts with plain SQL: SQL Server lets the later insert commit
     * (nothing makes it wait), and the claim holds it back while the earlier insert is uncommitted; after
     * the commit the earlier row comes first and the later one waits while the earlier one is leased.
     */
    @Test
    void aPlainInsertOfALaterEventCommitsButIsHeldBackWhileTheEarlierInsertIsUncommitted() throws SQLException {
        UUID early = UUID.randomUUID();
        UUID late = UUID.randomUUID();
        OutboxStore secondRelay = SqlServerOutbox.store(db.dataSource, settings);
        try (Connection first = db.dataSource.getConnection(); Connection second = db.dataSource.getConnection()) {
            first.setAutoCommit(false);
            insertPlain(first, early, "A");
            second.setAutoCommit(false);
            insertPlain(second, late, "A");
            second.commit();

            assertThat(store.claim(request(10, ParkingPolicy.HOLD_AGGREGATE)).isEmpty()).isTrue();
            assertThat(secondRelay.claim(request(10, ParkingPolicy.HOLD_AGGREGATE)).isEmpty()).isTrue();
            first.commit();
        }

        ClaimBatch firstClaim = store.claim(request(1, ParkingPolicy.HOLD_AGGREGATE));
        assertThat(ids(firstClaim)).containsExactly(early);
        assertThat(secondRelay.claim(request(10, ParkingPolicy.HOLD_AGGREGATE)).isEmpty()).isTrue();
        store.markSent(firstClaim.lease(), ids(firstClaim));
        assertThat(ids(secondRelay.claim(request(10, ParkingPolicy.HOLD_AGGREGATE)))).containsExactly(late);
    }

    @Test
    void deleteOnSendRemovesTheRowWhenItIsConfirmed() {
        OutboxStore deleting = SqlServerOutbox.store(db.dataSource, db.settings().deleteOnSend(true).build());
        write(List.of(anEventFor("A"), anEventFor("B")));
        ClaimBatch batch = deleting.claim(request(1, ParkingPolicy.HOLD_AGGREGATE));
        assertThat(deleting.markSent(batch.lease(), ids(batch))).isEqualTo(1);
        assertThat(deleting.stats().pending()).isEqualTo(1);
        assertThat(db.count("SELECT count(*) FROM " + settings.qualifiedTable())).isEqualTo(1);
    }

    @Test
    void purgeSkipsRowsAnotherSessionLocks() throws SQLException {
        List<OutboxEvent> events = List.of(anEventFor("p1"), anEventFor("p2"), anEventFor("p3"));
        write(events);
        ClaimBatch batch = store.claim(request(3, ParkingPolicy.HOLD_AGGREGATE));
        store.markSent(batch.lease(), ids(batch));
        db.execute("UPDATE " + settings.qualifiedTable() + " SET sent_at = DATEADD(hour, -2, SYSUTCDATETIME())");
        try (Connection other = db.dataSource.getConnection()) {
            other.setAutoCommit(false);
            try (Statement statement = other.createStatement()) {
                statement.execute("UPDATE " + settings.qualifiedTable() + " SET attempts = attempts"
                        + " WHERE event_id = '" + events.get(0).eventId() + "'");
            }
            assertThat(store.purgeSent(Duration.ofHours(1), 10)).isEqualTo(2);
            other.rollback();
        }
        assertThat(store.purgeSent(Duration.ofHours(1), 10)).isEqualTo(1);
    }

    @Test
    void anUnorderedClaimIsOneStatementAndSkipsLockedRows() throws SQLException {
        OutboxEvent a1 = anEventFor("A");
        OutboxEvent a2 = anEventFor("A");
        write(List.of(a1, a2));
        try (Connection other = db.dataSource.getConnection()) {
            other.setAutoCommit(false);
            try (Statement statement = other.createStatement()) {
                statement.execute("SELECT 1 FROM " + settings.qualifiedTable() + " WITH (UPDLOCK, ROWLOCK)"
                        + " WHERE event_id = '" + a1.eventId() + "'");
            }
            ClaimBatch batch = store.claim(new ClaimRequest("relay", 10, LEASE, Ordering.NONE,
                    ParkingPolicy.HOLD_AGGREGATE));
            assertThat(ids(batch)).containsExactly(a2.eventId());
            other.rollback();
        }
    }

    @Test
    void replayAllMakesEveryParkedRowPendingAndDueNow() {
        List<OutboxEvent> events = List.of(anEventFor("A"), anEventFor("B"), anEventFor("C"));
        write(events);
        ClaimBatch batch = store.claim(request(3, ParkingPolicy.HOLD_AGGREGATE));
        store.park(batch.lease(), ids(batch).stream().map(id -> new Park(id, "rejected")).toList());
        assertThat(store.parked(ReplaySelector.allParked(), 10)).hasSize(3);

        assertThat(store.replay(ReplaySelector.allParked())).isEqualTo(3);
        assertThat(store.parked(ReplaySelector.allParked(), 10)).isEmpty();
        assertThat(ids(store.claim(request(10, ParkingPolicy.HOLD_AGGREGATE))))
                .containsExactlyElementsOf(events.stream().map(OutboxEvent::eventId).toList());
    }

    private static ClaimRequest request(int maxRows, ParkingPolicy parking) {
        return new ClaimRequest("relay-test", maxRows, LEASE, Ordering.PER_AGGREGATE, parking);
    }

    private static List<UUID> ids(ClaimBatch batch) {
        return batch.deliveries().stream().map(ClaimedDelivery::eventId).toList();
    }

    /** An application's own INSERT, without QueueBox's writer. */
    private static void insertPlain(Connection connection, UUID eventId, String aggregateId) throws SQLException {
        try (PreparedStatement insert = connection.prepareStatement("INSERT INTO " + settings.qualifiedTable()
                + " (event_id, aggregate_type, aggregate_id, event_type, payload) VALUES (?, N'order', ?, N'OrderPlaced', 0x7B7D)")) {
            insert.setString(1, eventId.toString());
            insert.setString(2, aggregateId);
            insert.executeUpdate();
        }
    }

    private static void write(List<OutboxEvent> events) {
        try (Connection connection = db.dataSource.getConnection()) {
            connection.setAutoCommit(false);
            writer.enqueueAll(connection, events);
            connection.commit();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
