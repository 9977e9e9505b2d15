package io.queuebox.postgres;

import static io.queuebox.postgres.Events.anEventFor;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.OutboxWriter;
import io.queuebox.ports.ParkingPolicy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.postgresql.PGConnection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What the database itself enforces (V2__queuebox_aggregate_order.sql), for writers that never use
 * QueueBox's writer: plain SQL {@code INSERT}s on two JDBC connections.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PostgresAggregateOrderTest {

    private static final String DEADLOCK_DETECTED = "40P01";

    private static TestDatabase db;
    private static PostgresOutboxSettings settings;
    private static OutboxWriter<Connection> writer;
    private static OutboxStore firstRelay;
    private static OutboxStore secondRelay;

    private final ExecutorService threads = Executors.newCachedThreadPool();
    private final List<Connection> connections = new ArrayList<>();

    @BeforeAll
    static void schema() {
        db = TestDatabase.withFreshSchema("aggregate_order");
        settings = db.settings().build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        writer = PostgresOutbox.jdbcWriter(settings);
        firstRelay = PostgresOutbox.store(db.dataSource, settings);
        secondRelay = PostgresOutbox.store(db.dataSource, settings);
    }

    @AfterAll
    static void drop() {
        db.close();
    }

    @BeforeEach
    void empty() {
        db.execute("TRUNCATE " + settings.qualifiedTable());
    }

    @AfterEach
    void closeEverything() throws SQLException {
        threads.shutdownNow();
        for (Connection connection : connections) {
            connection.close();
        }
    }

    @Test
    void aPlainInsertOfALaterEventWaitsUntilTheTransactionOfTheEarlierOneEnds() throws Exception {
        String aggregate = "order-" + UUID.randomUUID();
        UUID earlyId = UUID.randomUUID();
        UUID lateId = UUID.randomUUID();
        Connection early = transaction();
        Connection late = transaction();
        insertPlain(early, earlyId, aggregate);

        Future<?> lateInsert = threads.submit(() -> {
            insertPlain(late, lateId, aggregate);
            late.commit();
            return null;
        });

        assertThat(doneWithin(lateInsert, Duration.ofSeconds(1)))
                .as("the later insert of the same aggregate waits for the open transaction").isFalse();
        assertThat(waitEventOf(late)).as("what the later insert waits for").isEqualTo("Lock/advisory");
        assertThat(firstRelay.claim(request("relay-1", 10)).isEmpty()).isTrue();

        early.commit();
        lateInsert.get(10, TimeUnit.SECONDS);

        assertThat(sequenceOf(earlyId)).isLessThan(sequenceOf(lateId));
        ClaimBatch first = firstRelay.claim(request("relay-1", 1));
        assertThat(first.deliveries()).extracting(ClaimedDelivery::eventId).containsExactly(earlyId);
        assertThat(secondRelay.claim(request("relay-2", 10)).isEmpty())
                .as("the later event waits while the earlier one is leased").isTrue();
        firstRelay.markSent(first.lease(), List.of(earlyId));
        assertThat(secondRelay.claim(request("relay-2", 10)).deliveries()).extracting(ClaimedDelivery::eventId)
                .containsExactly(lateId);
    }

    @Test
    void anInsertUnderTheReplicaRoleStillWaitsForTheEarlierEventOfItsAggregate() throws Exception {
        String aggregate = "order-" + UUID.randomUUID();
        Connection early = transaction();
        insertPlain(early, UUID.randomUUID(), aggregate);
        Connection replica = transaction();
        try (Statement statement = replica.createStatement()) {
            // What replication apply, restores and bulk tools set to skip ordinary triggers.
            statement.execute("SET session_replication_role = replica");
        }

        Future<?> replicaInsert = threads.submit(() -> {
            insertPlain(replica, UUID.randomUUID(), aggregate);
            replica.commit();
            return null;
        });

        assertThat(doneWithin(replicaInsert, Duration.ofSeconds(1)))
                .as("the insert under session_replication_role = replica waits for the open transaction").isFalse();
        early.rollback();
        replicaInsert.get(10, TimeUnit.SECONDS);
    }

    @Test
    void anUpdateCannotMoveARowIntoAnotherAggregateNorGiveItANewSeq() throws Exception {
        UUID eventId = UUID.randomUUID();
        Connection connection = transaction();
        insertPlain(connection, eventId, "order-" + UUID.randomUUID());
        connection.commit();

        for (String change : List.of("aggregate_id = 'order-elsewhere'", "aggregate_type = 'invoice'",
                "seq = DEFAULT")) {
            assertThatThrownBy(() -> db.execute("UPDATE " + settings.qualifiedTable() + " SET " + change
                    + " WHERE event_id = '" + eventId + "'"))
                    .as(change).hasMessageContaining("cannot change (event " + eventId + ")");
        }
        db.execute("UPDATE " + settings.qualifiedTable() + " SET aggregate_id = aggregate_id, attempts = 1"
                + " WHERE event_id = '" + eventId + "'");
        assertThat(queryLong("SELECT attempts FROM " + settings.qualifiedTable() + " WHERE event_id = '" + eventId
                + "'")).as("an update that leaves the order alone goes through").isEqualTo(1);
    }

    @Test
    void writersOfOtherAggregatesDoNotWait() throws Exception {
        Connection open = transaction();
        insertPlain(open, UUID.randomUUID(), "order-held");
        Connection other = transaction();
        UUID otherId = UUID.randomUUID();

        Future<?> otherInsert = threads.submit(() -> {
            insertPlain(other, otherId, "order-other");
            other.commit();
            return null;
        });

        assertThat(doneWithin(otherInsert, Duration.ofSeconds(5))).isTrue();
        otherInsert.get();
        assertThat(firstRelay.claim(request("relay-1", 10)).deliveries()).extracting(ClaimedDelivery::eventId)
                .containsExactly(otherId);
        open.rollback();
    }

    @Test
    void aSeqGivenByTheInsertIsReplacedByOneDrawnUnderTheLock() throws Exception {
        UUID first = UUID.randomUUID();
        UUID second = UUID.randomUUID();
        try (Connection connection = db.dataSource.getConnection()) {
            insertPlain(connection, first, "order-1");
            try (PreparedStatement insert = connection.prepareStatement("INSERT INTO " + settings.qualifiedTable()
                    + " (event_id, seq, aggregate_type, aggregate_id, event_type, payload)"
                    + " OVERRIDING SYSTEM VALUE VALUES (?, 1, 'order', 'order-1', 'OrderPlaced', '\\x7b7d')")) {
                insert.setObject(1, second);
                insert.executeUpdate();
            }
        }

        assertThat(sequenceOf(second)).isGreaterThan(sequenceOf(first));
    }

    @Test
    void theWriterAndTheTriggerLockTheSameKeyForAnAggregate() throws Exception {
        Connection connection = transaction();
        writer.enqueueAll(connection, List.of(anEventFor("order-a"), anEventFor("order-b"), anEventFor("order-a")));

        assertThat(advisoryKeysHeldBy(connection)).as("one lock per aggregate, whoever took it")
                .containsExactlyInAnyOrder(lockKey("order", "order-a"), lockKey("order", "order-b"));

        insertPlain(connection, UUID.randomUUID(), "order-c");
        assertThat(advisoryKeysHeldBy(connection)).containsExactlyInAnyOrder(lockKey("order", "order-a"),
                lockKey("order", "order-b"), lockKey("order", "order-c"));
        connection.rollback();
        assertThat(advisoryKeysHeldBy(connection)).as("released at the end of the transaction").isEmpty();
    }

    @Test
    void aBatchTakesTheLocksOfAllItsAggregatesInKeyOrderBeforeItInsertsARow() throws Exception {
        // Two aggregates whose keys sort against list order: a batch that locked row by row would hold
        // 'high' while it waits for 'low'.
        String low = "order-" + UUID.randomUUID();
        String high = "order-" + UUID.randomUUID();
        if (lockKey("order", low) > lockKey("order", high)) {
            String swap = low;
            low = high;
            high = swap;
        }
        Connection holder = transaction();
        insertPlain(holder, UUID.randomUUID(), low);
        Connection batch = transaction();
        List<OutboxEvent> events = List.of(anEventFor(high), anEventFor(low));

        Future<?> write = threads.submit(() -> {
            writer.enqueueAll(batch, events);
            batch.commit();
            return null;
        });
        await().atMost(Duration.ofSeconds(10)).until(() -> "Lock/advisory".equals(waitEventOf(batch)));

        assertThat(advisoryKeysHeldBy(batch)).as("locks the waiting batch holds").isEmpty();
        holder.commit();
        write.get(10, TimeUnit.SECONDS);
    }

    @Test
    void twoTransactionsThatLockTwoAggregatesInOppositeOrderAcrossStatementsDeadlockAndOneIsAborted()
            throws Exception {
        Connection one = transaction();
        Connection two = transaction();
        insertPlain(one, UUID.randomUUID(), "order-a");
        insertPlain(two, UUID.randomUUID(), "order-b");

        Future<?> oneSecond = threads.submit(() -> {
            insertPlain(one, UUID.randomUUID(), "order-b");
            return null;
        });
        await().atMost(Duration.ofSeconds(10)).until(() -> "Lock/advisory".equals(waitEventOf(one)));
        Future<?> twoSecond = threads.submit(() -> {
            insertPlain(two, UUID.randomUUID(), "order-a");
            return null;
        });

        List<String> states = new ArrayList<>();
        for (Future<?> statement : List.of(oneSecond, twoSecond)) {
            try {
                statement.get(20, TimeUnit.SECONDS);
                states.add("ok");
            } catch (ExecutionException e) {
                states.add(e.getCause() instanceof SQLException sql ? sql.getSQLState() : e.getCause().toString());
            }
        }
        assertThat(states).as("PostgreSQL aborts one of the two after deadlock_timeout")
                .containsExactlyInAnyOrder("ok", DEADLOCK_DETECTED);
        one.rollback();
        two.rollback();
    }

    // ------------------------------------------------------------------------------------ helpers

    private Connection transaction() throws SQLException {
        Connection connection = db.dataSource.getConnection();
        connections.add(connection);
        connection.setAutoCommit(false);
        return connection;
    }

    /** An application's own INSERT, without QueueBox's writer. */
    private static void insertPlain(Connection connection, UUID eventId, String aggregateId) throws SQLException {
        try (PreparedStatement insert = connection.prepareStatement("INSERT INTO " + settings.qualifiedTable()
                + " (event_id, aggregate_type, aggregate_id, event_type, payload)"
                + " VALUES (?, 'order', ?, 'OrderPlaced', convert_to('{}', 'UTF8'))")) {
            insert.setObject(1, eventId);
            insert.setString(2, aggregateId);
            insert.executeUpdate();
        }
    }

    private static boolean doneWithin(Future<?> task, Duration limit) {
        long deadline = System.nanoTime() + limit.toNanos();
        await().atMost(limit.plusSeconds(5)).pollInterval(Duration.ofMillis(10))
                .until(() -> task.isDone() || System.nanoTime() >= deadline);
        return task.isDone();
    }

    private static ClaimRequest request(String owner, int maxRows) {
        return new ClaimRequest(owner, maxRows, Duration.ofSeconds(30), Ordering.PER_AGGREGATE,
                ParkingPolicy.HOLD_AGGREGATE);
    }

    private static long sequenceOf(UUID eventId) throws SQLException {
        return queryLong("SELECT seq FROM " + settings.qualifiedTable() + " WHERE event_id = '" + eventId + "'");
    }

    /** The key the writer computes (and the trigger must compute) for an aggregate. */
    private static int lockKey(String type, String id) throws SQLException {
        return (int) queryLong("SELECT " + EventWriter.AGGREGATE_LOCK_KEY
                .replace("%t", "'" + type + "'::text").replace("%i", "'" + id + "'::text"));
    }

    /** The second keys of the advisory locks a connection holds in this outbox table's key space. */
    private static Set<Integer> advisoryKeysHeldBy(Connection connection) throws SQLException {
        int pid = pidOf(connection);
        Set<Integer> keys = new HashSet<>();
        try (Connection observer = db.dataSource.getConnection();
             PreparedStatement query = observer.prepareStatement("SELECT objid::integer FROM pg_locks"
                     + " WHERE locktype = 'advisory' AND objsubid = 2 AND granted AND pid = ?"
                     + " AND classid = '" + settings.qualifiedTable() + "'::regclass::oid")) {
            query.setInt(1, pid);
            try (ResultSet rs = query.executeQuery()) {
                while (rs.next()) {
                    keys.add(rs.getInt(1));
                }
            }
        }
        return keys;
    }

    /** {@code wait_event_type/wait_event} of a connection's backend, as another session sees it. */
    private static String waitEventOf(Connection connection) throws SQLException {
        try (Connection observer = db.dataSource.getConnection();
             PreparedStatement query = observer.prepareStatement(
                     "SELECT wait_event_type || '/' || wait_event FROM pg_stat_activity WHERE pid = ?")) {
            query.setInt(1, pidOf(connection));
            try (ResultSet rs = query.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    private static int pidOf(Connection connection) throws SQLException {
        return connection.unwrap(PGConnection.class).getBackendPID();
    }

    private static long queryLong(String sql) throws SQLException {
        try (Connection connection = db.dataSource.getConnection(); Statement statement = connection.createStatement();
             ResultSet rs = statement.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
