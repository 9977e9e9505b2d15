package io.queuebox.postgres;

import static io.queuebox.postgres.Events.anEventFor;
import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.OutboxWriter;
import io.queuebox.ports.Park;
import io.queuebox.ports.ParkedEvent;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.ports.ReplaySelector;
import io.queuebox.ports.Reschedule;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.SqlLogger;
import org.jdbi.v3.core.statement.StatementContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import io.queuebox.testkit.services.TestServices;
import io.queuebox.jdbc.testing.ReusingDataSource;

/**
 * What is particular to the SQL of the PostgreSQL store: statement counts, the SKIP LOCKED ordering guard,
 * fencing against a re-claim, purge and delete-on-send. The shared semantics are the store contract's.
 */
class PostgresOutboxStoreSqlTest {

    private static final Duration LEASE = Duration.ofMinutes(5);

    private static TestDatabase db;
    private static PostgresOutboxSettings settings;
    private static OutboxWriter<Connection> writer;
    private static final AtomicInteger statements = new AtomicInteger();
    private static OutboxStore store;
    private static ReusingDataSource firstRelay;
    private static ReusingDataSource secondRelay;

    @BeforeAll
    static void schema() {
        db = TestDatabase.withFreshSchema("store");
        settings = db.settings().build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        writer = PostgresOutbox.jdbcWriter(settings);
        firstRelay = TestDatabase.reusing(TestServices.postgresUrl(), "queuebox-first-relay");
        secondRelay = TestDatabase.reusing(TestServices.postgresUrl(), "queuebox-second-relay");
        Jdbi jdbi = Jdbi.create(firstRelay);
        jdbi.setSqlLogger(new SqlLogger() {
            @Override
            public void logAfterExecution(StatementContext context) {
                statements.incrementAndGet();
            }
        });
        store = PostgresOutbox.store(jdbi, settings);
    }

    @AfterAll
    static void drop() {
        firstRelay.close();
        secondRelay.close();
        db.close();
    }

    @BeforeEach
    void empty() {
        db.execute("TRUNCATE " + settings.qualifiedTable());
    }

    @Test
    void aBatchOf500IsOneStatementToClaimAndOneToMarkSent() {
        List<OutboxEvent> events = new ArrayList<>();
        for (int i = 0; i < 500; i++) {
            events.add(anEventFor("aggregate-" + (i % 50)));
        }
        write(events);

        statements.set(0);
        ClaimBatch batch = store.claim(request(500, ParkingPolicy.HOLD_AGGREGATE));
        int claimStatements = statements.getAndSet(0);
        int marked = store.markSent(batch.lease(), batch.deliveries().stream().map(ClaimedDelivery::eventId).toList());
        int markStatements = statements.get();

        assertThat(batch.size()).isEqualTo(500);
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

        // A claimer in the middle of its claim holds the row lock on A1 and has not yet committed its lease.
        try (Connection other = db.dataSource.getConnection()) {
            other.setAutoCommit(false);
            try (Statement statement = other.createStatement()) {
                statement.execute("SELECT 1 FROM " + settings.qualifiedTable() + " WHERE event_id = '"
                        + a1.eventId() + "' FOR UPDATE");
            }
            ClaimBatch whileLocked = store.claim(request(10, ParkingPolicy.HOLD_AGGREGATE));
            assertThat(ids(whileLocked)).containsExactly(b1.eventId());
            other.rollback();
        }

        ClaimBatch afterwards = store.claim(request(10, ParkingPolicy.HOLD_AGGREGATE));
        assertThat(ids(afterwards)).containsExactly(a1.eventId(), a2.eventId());
    }

    @Test
    void twoClaimersOnTwoConnectionsNeverShareARowNorOvertakeAnEarlierRowOfAnAggregate() throws Exception {
        List<OutboxEvent> events = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            events.add(anEventFor("agg-" + (i % 13)));
        }
        write(events);
        Map<UUID, String> aggregateOf = new HashMap<>();
        Map<String, List<UUID>> orderOf = new HashMap<>();
        for (OutboxEvent event : events) {
            aggregateOf.put(event.eventId(), event.aggregateId());
            orderOf.computeIfAbsent(event.aggregateId(), a -> new ArrayList<>()).add(event.eventId());
        }
        Set<UUID> sent = new HashSet<>();
        List<String> violations = new CopyOnWriteArrayList<>();
        List<OutboxStore> claimers = List.of(store, PostgresOutbox.store(secondRelay, settings));

        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            List<Future<Integer>> results = new ArrayList<>();
            for (OutboxStore claimer : claimers) {
                results.add(pool.submit(() -> {
                    int claimed = 0;
                    int emptyInARow = 0;
                    while (emptyInARow < 3) {
                        ClaimBatch batch = claimer.claim(request(7, ParkingPolicy.HOLD_AGGREGATE));
                        emptyInARow = batch.isEmpty() ? emptyInARow + 1 : 0;
                        synchronized (sent) {
                            Set<UUID> inBatch = new HashSet<>(ids(batch));
                            for (UUID id : ids(batch)) {
                                List<UUID> order = orderOf.get(aggregateOf.get(id));
                                for (UUID earlier : order.subList(0, order.indexOf(id))) {
                                    if (!sent.contains(earlier) && !inBatch.contains(earlier)) {
                                        violations.add(id + " claimed before its earlier sibling " + earlier);
                                    }
                                }
                                if (!sent.add(id)) {
                                    violations.add(id + " claimed twice");
                                }
                            }
                        }
                        claimed += claimer.markSent(batch.lease(), ids(batch));
                    }
                    return claimed;
                }));
            }
            int total = 0;
            for (Future<Integer> result : results) {
                total += result.get(60, TimeUnit.SECONDS);
            }
            assertThat(violations).isEmpty();
            assertThat(total).isEqualTo(300);
            assertThat(sent).hasSize(300);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aStaleClaimerChangesNothingOnceAnotherReclaimedTheRow() {
        OutboxEvent event = anEventFor("A");
        write(List.of(event));
        ClaimBatch stale = store.claim(request(10, ParkingPolicy.HOLD_AGGREGATE));
        expireLeases();
        ClaimBatch fresh = store.claim(request(10, ParkingPolicy.HOLD_AGGREGATE));
        assertThat(ids(fresh)).containsExactly(event.eventId());

        assertThat(store.markSent(stale.lease(), List.of(event.eventId()))).isZero();
        assertThat(store.reschedule(stale.lease(), List.of(new Reschedule(event.eventId(), Duration.ZERO, "x"))))
                .isZero();
        assertThat(store.park(stale.lease(), List.of(new Park(event.eventId(), "x")))).isZero();
        assertThat(store.release(stale.lease(), List.of(event.eventId()))).isZero();
        assertThat(store.renew(stale.lease(), LEASE)).isZero();
        assertThat(store.markSent(fresh.lease(), List.of(event.eventId()))).isEqualTo(1);
    }

    @Test
    void anExpiredLeaseNobodyReclaimedStillLetsItsClaimerFinish() {
        OutboxEvent event = anEventFor("A");
        write(List.of(event));
        ClaimBatch batch = store.claim(request(10, ParkingPolicy.HOLD_AGGREGATE));
        expireLeases();
        assertThat(store.renew(batch.lease(), LEASE)).isEqualTo(1);
        assertThat(store.claim(request(10, ParkingPolicy.HOLD_AGGREGATE)).isEmpty()).isTrue();
        assertThat(store.markSent(batch.lease(), List.of(event.eventId()))).isEqualTo(1);
        assertThat(store.timeUntilNextDue()).isEmpty();
    }

    @Test
    void aRescheduledRowHoldsBackItsAggregateButNotOtherAggregates() {
        OutboxEvent a1 = anEventFor("A");
        OutboxEvent a2 = anEventFor("A");
        OutboxEvent b1 = anEventFor("B");
        write(List.of(a1, a2, b1));
        ClaimBatch first = store.claim(request(1, ParkingPolicy.HOLD_AGGREGATE));
        assertThat(ids(first)).containsExactly(a1.eventId());
        assertThat(store.reschedule(first.lease(), List.of(new Reschedule(a1.eventId(), Duration.ofMinutes(10),
                "broker down")))).isEqualTo(1);

        ClaimBatch second = store.claim(request(10, ParkingPolicy.HOLD_AGGREGATE));
        assertThat(ids(second)).containsExactly(b1.eventId());
        store.markSent(second.lease(), ids(second));
        // Like the in-memory store, the next-due time ignores ordering: the held-back A2 counts as due.
        assertThat(store.timeUntilNextDue()).contains(Duration.ZERO);
        assertThat(store.claim(request(10, ParkingPolicy.HOLD_AGGREGATE)).isEmpty()).isTrue();
        assertThat(store.claim(new ClaimRequest("unordered", 10, LEASE, Ordering.NONE, ParkingPolicy.HOLD_AGGREGATE))
                .deliveries()).extracting(ClaimedDelivery::eventId).containsExactly(a2.eventId());
    }

    @Test
    void aParkedRowHoldsItsAggregateOnlyUnderHoldAndReplayMakesItPendingAgain() {
        OutboxEvent a1 = anEventFor("A");
        OutboxEvent a2 = anEventFor("A");
        write(List.of(a1, a2));
        ClaimBatch first = store.claim(request(1, ParkingPolicy.HOLD_AGGREGATE));
        assertThat(store.park(first.lease(), List.of(new Park(a1.eventId(), "no such topic")))).isEqualTo(1);

        assertThat(store.claim(request(10, ParkingPolicy.HOLD_AGGREGATE)).isEmpty()).isTrue();
        ClaimBatch continuing = store.claim(request(10, ParkingPolicy.CONTINUE_AGGREGATE));
        assertThat(ids(continuing)).containsExactly(a2.eventId());
        store.markSent(continuing.lease(), ids(continuing));

        List<ParkedEvent> parked = store.parked(ReplaySelector.aggregate("order", "A"), 10);
        assertThat(parked).singleElement().satisfies(p -> {
            assertThat(p.event()).isEqualTo(a1);
            assertThat(p.attempts()).isEqualTo(1);
            assertThat(p.lastError()).isEqualTo("no such topic");
        });
        assertThat(store.stats().parked()).isEqualTo(1);
        assertThat(store.replay(ReplaySelector.events(Set.of(a1.eventId())))).isEqualTo(1);
        ClaimBatch replayed = store.claim(request(10, ParkingPolicy.HOLD_AGGREGATE));
        assertThat(replayed.deliveries()).singleElement().satisfies(d -> {
            assertThat(d.eventId()).isEqualTo(a1.eventId());
            assertThat(d.attempts()).isZero();
        });
    }

    @Test
    void purgeDeletesOnlyOldSentRowsInBoundedBatches() {
        List<OutboxEvent> events = new ArrayList<>();
        for (int i = 0; i < 25; i++) {
            events.add(anEventFor("p" + i));
        }
        write(events);
        ClaimBatch batch = store.claim(request(20, ParkingPolicy.HOLD_AGGREGATE));
        store.markSent(batch.lease(), ids(batch));
        assertThat(store.purgeSent(Duration.ofHours(1), 100)).as("sent rows inside the retention stay").isZero();
        db.execute("UPDATE " + settings.qualifiedTable() + " SET sent_at = now() - interval '2 hours'"
                + " WHERE status = 'sent'");

        assertThat(store.purgeSent(Duration.ofHours(1), 8)).isEqualTo(8);
        assertThat(store.purgeSent(Duration.ofHours(1), 8)).isEqualTo(8);
        assertThat(store.purgeSent(Duration.ofHours(1), 8)).isEqualTo(4);
        assertThat(store.purgeSent(Duration.ofHours(1), 8)).isZero();
        assertThat(store.stats().pending()).isEqualTo(5);
    }

    @Test
    void deleteOnSendRemovesTheRowWhenItIsConfirmed() {
        OutboxStore deleting = PostgresOutbox.store(db.dataSource, db.settings().deleteOnSend(true).build());
        write(List.of(anEventFor("A"), anEventFor("B")));
        ClaimBatch batch = deleting.claim(request(1, ParkingPolicy.HOLD_AGGREGATE));
        assertThat(deleting.markSent(batch.lease(), ids(batch))).isEqualTo(1);
        assertThat(deleting.stats().pending()).isEqualTo(1);
        long rows = Jdbi.create(db.dataSource).withHandle(h -> h.createQuery("SELECT count(*) FROM "
                + settings.qualifiedTable()).mapTo(Long.class).one());
        assertThat(rows).isEqualTo(1);
    }

    @Test
    void statsCountPendingLeasedAndParkedRows() {
        write(List.of(anEventFor("A"), anEventFor("B"), anEventFor("C")));
        assertThat(store.stats().oldestPendingAge()).isPresent();
        ClaimBatch batch = store.claim(request(2, ParkingPolicy.HOLD_AGGREGATE));
        store.park(batch.lease(), List.of(new Park(batch.deliveries().get(0).eventId(), "bad")));
        var stats = store.stats();
        assertThat(stats.pending()).isEqualTo(2);
        assertThat(stats.leased()).isEqualTo(1);
        assertThat(stats.parked()).isEqualTo(1);
        assertThat(store.timeUntilNextDue()).contains(Duration.ZERO);
    }

    private static ClaimRequest request(int maxRows, ParkingPolicy parking) {
        return new ClaimRequest("relay-test", maxRows, LEASE, Ordering.PER_AGGREGATE, parking);
    }

    private static List<UUID> ids(ClaimBatch batch) {
        return batch.deliveries().stream().map(ClaimedDelivery::eventId).toList();
    }

    private static void expireLeases() {
        db.execute("UPDATE " + settings.qualifiedTable() + " SET lease_until = now() - interval '1 second'"
                + " WHERE lease_until IS NOT NULL");
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
