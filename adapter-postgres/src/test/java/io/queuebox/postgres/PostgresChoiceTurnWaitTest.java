package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.StatementContext;
import org.jdbi.v3.core.statement.StatementCustomizer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The turn among processes is waited for in the advisory lock's queue under a lock_timeout, which fails the statement
 * and its transaction when it runs out (PostgresOutboxStore.Choice): the claim must then go on without the turn,
 * keeping what earlier rounds of the same claim locked, and the batch's later statements must not inherit the
 * claim's lock_timeout.
 */
class PostgresChoiceTurnWaitTest {

    private static final Duration LEASE = Duration.ofSeconds(2);

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private Connection other;

    @BeforeEach
    void schema() {
        db = TestDatabase.withFreshSchema("turnwait");
        settings = db.settings().holdRowLocks(true).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
    }

    @AfterEach
    void drop() throws SQLException {
        if (other != null) {
            other.close();
        }
        db.endHeldClaims();
        db.close();
    }

    private static ClaimRequest ordered(String owner, int maxRows) {
        return new ClaimRequest(owner, maxRows, LEASE, Ordering.PER_AGGREGATE, ParkingPolicy.HOLD_AGGREGATE);
    }

    private static List<UUID> ids(ClaimBatch batch) {
        return batch.deliveries().stream().map(ClaimedDelivery::eventId).toList();
    }

    /** A full claim (maxRows 1), so that the store's next claim takes the turn among processes (backlogSeen). */
    private void fullClaim(OutboxStore store) {
        UUID row = db.insertRow(settings, "warm", "created", "{}");
        ClaimBatch batch = store.claim(ordered("warm", 1));
        assertThat(ids(batch)).containsExactly(row);
        store.markSent(batch.lease(), List.of(row));
    }

    /** Another relay's turn to choose, held on a connection of its own until the test ends. */
    private void anotherRelayTakesTheTurn() {
        try {
            other = db.anotherRelaysTurn(settings);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private String status(UUID eventId) throws SQLException {
        return db.columnOf(settings, eventId, "status");
    }

    /**
     * Round 1 takes the turn, chooses a1 and a row parked at claim, gives the turn up for the parking (another relay
     * takes it then) and locks a1; round 2 waits out its bound. Rolling the transaction back there, as the first
     * round may, would have dropped a1's lock while the claim handed a1 out.
     */
    @Test
    void aLaterRoundThatWaitsOutTheTurnKeepsTheRowsOfTheEarlierOne() throws Exception {
        AtomicBoolean takeTurnAfterParking = new AtomicBoolean();
        Jdbi jdbi = Jdbi.create(db.dataSource);
        jdbi.addCustomizer(new StatementCustomizer() {
            @Override
            public void afterExecution(PreparedStatement stmt, StatementContext ctx) {
                if (ctx.getRenderedSql().contains("SET status = 'parked'") && takeTurnAfterParking.compareAndSet(true, false)) {
                    anotherRelayTakesTheTurn();
                }
            }
        });
        OutboxStore relay = PostgresOutbox.store(jdbi, settings);
        fullClaim(relay);
        UUID a1 = db.insertRow(settings, "a", "created", "{}");
        UUID bad = db.insertRow(settings, "u", "created", "[1]"); // headers not an object: parked at claim
        takeTurnAfterParking.set(true);

        long started = System.nanoTime();
        ClaimBatch batch = relay.claim(ordered("relay", 3));
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);

        assertThat(takeTurnAfterParking).as("another relay took the turn after the parking").isFalse();
        assertThat(ids(batch)).containsExactly(a1);
        assertThat(millis).as("the second round waited for the turn (a tenth of the lease, 200 ms)").isGreaterThanOrEqualTo(190L);
        assertThat(db.lockedByAnyone(settings, a1)).as("a1 is still locked by the claim that handed it out").isTrue();
        assertThat(status(bad)).isEqualTo("parked");
        relay.markSent(batch.lease(), List.of(a1));
        assertThat(status(a1)).isEqualTo("sent");
    }

    /**
     * Review finding (f13365c; helper, read-only): a first round that waited out the turn rolled its whole transaction
     * back before asking whether the lock came as it gave up. Behind PgBouncer in transaction mode the rollback hands
     * the server session back to the pool, and the question then goes to another session: a turn granted at the
     * timeout stayed held on the first. The claim must keep its transaction (a savepoint) to the end of the check.
     */
    @Test
    void aClaimThatWaitsOutTheTurnNeverEndsItsTransactionBeforeItChose() throws Exception {
        AtomicInteger rollbacks = new AtomicInteger();
        OutboxStore relay = PostgresOutbox.store(JdbcSpy.counting(db.dataSource,
                (method, args) -> method.equals("rollback") && (args == null || args.length == 0), rollbacks), settings);
        fullClaim(relay);
        UUID a1 = db.insertRow(settings, "a", "created", "{}");
        anotherRelayTakesTheTurn();
        rollbacks.set(0);

        ClaimBatch batch = relay.claim(ordered("relay", 1));

        assertThat(ids(batch)).containsExactly(a1);
        assertThat(rollbacks).as("whole-transaction rollbacks in a claim that waited out the turn").hasValue(0);
        assertThat(db.lockedByAnyone(settings, a1)).isTrue();
        relay.markSent(batch.lease(), List.of(a1));
    }

    /**
     * The turn's own lock_timeout ends with the turn statement: the batch's statements run under the session's. The
     * turn is busy when the claim tries it, and given back as soon as the try has failed, so the claim takes it in the
     * lock's queue.
     */
    @Test
    void theTurnLeavesTheSessionsLockTimeoutToTheRestOfTheBatch() throws Exception {
        List<String> afterTurn = new CopyOnWriteArrayList<>();
        Jdbi jdbi = Jdbi.create(db.dataSource);
        jdbi.addCustomizer(new StatementCustomizer() {
            @Override
            public void afterExecution(PreparedStatement stmt, StatementContext ctx) throws SQLException {
                if (ctx.getRenderedSql().contains("pg_try_advisory_lock(" + OutboxSql.CHOICE_TURN_LOCK_KEY) && other != null) {
                    other.close();
                    other = null;
                }
                if (ctx.getRenderedSql().contains("pg_advisory_lock(" + OutboxSql.CHOICE_TURN_LOCK_KEY)) {
                    try (Statement show = stmt.getConnection().createStatement();
                         ResultSet rs = show.executeQuery("SHOW lock_timeout")) {
                        rs.next();
                        afterTurn.add(rs.getString(1));
                    }
                }
            }
        });
        OutboxStore relay = PostgresOutbox.store(jdbi, settings);
        fullClaim(relay);
        UUID a1 = db.insertRow(settings, "a", "created", "{}");
        anotherRelayTakesTheTurn();
        ClaimBatch batch = relay.claim(ordered("relay", 1));

        assertThat(ids(batch)).containsExactly(a1);
        assertThat(other).as("the other relay gave the turn back after the claim's try").isNull();
        assertThat(afterTurn).as("lock_timeout right after the turn was taken (the session's is 0)").containsExactly("0");
        relay.markSent(batch.lease(), List.of(a1));
    }
}
