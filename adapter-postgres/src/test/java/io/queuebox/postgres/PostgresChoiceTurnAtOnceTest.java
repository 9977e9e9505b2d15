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
import java.util.concurrent.atomic.AtomicInteger;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.StatementContext;
import org.jdbi.v3.core.statement.StatementCustomizer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A turn among processes that nobody holds or waits for is taken in one statement, without the savepoint and the
 * lock_timeout the wait in the lock's queue needs: a relay that runs alone takes it in every claim of a backlog, with
 * its other worker waiting for the claim's in-process turn meanwhile. The turn must still be held while the claim
 * chooses, and the claim's timeouts set by that statement (PostgresChoiceTurnCutRelayTest covers a relay cut after it).
 */
class PostgresChoiceTurnAtOnceTest {

    private static final Duration LEASE = Duration.ofSeconds(2);

    private TestDatabase db;
    private PostgresOutboxSettings settings;

    @BeforeEach
    void schema() {
        db = TestDatabase.withFreshSchema("turnonce");
        settings = db.settings().holdRowLocks(true).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
    }

    @AfterEach
    void drop() {
        db.endHeldClaims();
        db.close();
    }

    private static ClaimRequest ordered(String owner) {
        return new ClaimRequest(owner, 1, LEASE, Ordering.PER_AGGREGATE, ParkingPolicy.HOLD_AGGREGATE);
    }

    private static List<UUID> ids(ClaimBatch batch) {
        return batch.deliveries().stream().map(ClaimedDelivery::eventId).toList();
    }

    @Test
    void aFreeTurnIsTakenWithoutASavepointAndHeldWhileTheClaimChooses() throws Exception {
        AtomicInteger savepoints = new AtomicInteger();
        List<Boolean> othersCouldTakeIt = new CopyOnWriteArrayList<>();
        List<String> idleTimeoutWhileChoosing = new CopyOnWriteArrayList<>();
        Jdbi jdbi = Jdbi.create(JdbcSpy.counting(db.dataSource, (method, args) -> method.equals("setSavepoint"), savepoints));
        jdbi.addCustomizer(new StatementCustomizer() {
            @Override
            public void beforeExecution(PreparedStatement stmt, StatementContext ctx) throws SQLException {
                if (ctx.getRenderedSql().contains("WITH RECURSIVE win")) {
                    othersCouldTakeIt.add(anotherRelayCouldTakeTheTurn());
                    try (Statement show = stmt.getConnection().createStatement();
                         ResultSet rs = show.executeQuery("SHOW idle_in_transaction_session_timeout")) {
                        rs.next();
                        idleTimeoutWhileChoosing.add(rs.getString(1));
                    }
                }
            }
        });
        OutboxStore relay = PostgresOutbox.store(jdbi, settings);
        UUID warm = db.insertRow(settings, "warm", "created", "{}");
        ClaimBatch first = relay.claim(ordered("relay")); // full: the next claim takes the turn among processes
        relay.markSent(first.lease(), ids(first));
        assertThat(ids(first)).containsExactly(warm);
        UUID a1 = db.insertRow(settings, "a", "created", "{}");
        othersCouldTakeIt.clear();
        idleTimeoutWhileChoosing.clear();
        savepoints.set(0);

        ClaimBatch batch = relay.claim(ordered("relay"));

        assertThat(ids(batch)).containsExactly(a1);
        assertThat(othersCouldTakeIt).as("another relay could take the turn while the claim chose").containsExactly(false);
        assertThat(idleTimeoutWhileChoosing).as("the claim's idle timeout (its lease) while it chose").containsExactly("2s");
        assertThat(savepoints).as("savepoints set by a claim that found the turn free").hasValue(0);
        relay.markSent(batch.lease(), ids(batch));
        assertThat(anotherRelayCouldTakeTheTurn()).as("the turn given back").isTrue();
    }

    /** Every chosen row was locked by another claimer before this claim could: the turn still ends, nothing is handed out. */
    @Test
    void aLockThatFindsEveryChosenRowTakenStillEndsTheTurn() throws Exception {
        List<Boolean> turnFreeAfterLock = new CopyOnWriteArrayList<>();
        Connection thief = db.dataSource.getConnection();
        thief.setAutoCommit(false);
        try {
            Jdbi jdbi = Jdbi.create(db.dataSource);
            OutboxStore relay = PostgresOutbox.store(jdbi, settings);
            UUID warm = db.insertRow(settings, "warm", "created", "{}");
            ClaimBatch first = relay.claim(ordered("relay"));
            relay.markSent(first.lease(), ids(first));
            assertThat(ids(first)).containsExactly(warm);
            UUID a1 = db.insertRow(settings, "a", "created", "{}");
            jdbi.addCustomizer(new StatementCustomizer() {
                @Override
                public void afterExecution(PreparedStatement stmt, StatementContext ctx) throws SQLException {
                    String sql = ctx.getRenderedSql();
                    if (sql.contains("WITH RECURSIVE win") && turnFreeAfterLock.isEmpty()) {
                        try (Statement take = thief.createStatement()) { // between the choice and the lock
                            take.execute("SELECT 1 FROM " + settings.qualifiedTable() + " WHERE event_id = '" + a1 + "' FOR UPDATE");
                        }
                    } else if (sql.contains("pg_advisory_unlock(" + OutboxSql.CHOICE_TURN_LOCK_KEY) && turnFreeAfterLock.isEmpty()) {
                        turnFreeAfterLock.add(anotherRelayCouldTakeTheTurn());
                    }
                }
            });

            ClaimBatch batch = relay.claim(ordered("relay"));

            assertThat(ids(batch)).as("a1 is the other claimer's").isEmpty();
            assertThat(turnFreeAfterLock).as("another relay could take the turn right after the lock that found a1 taken")
                    .containsExactly(true);
            assertThat(anotherRelayCouldTakeTheTurn()).as("the turn given back").isTrue();
        } finally {
            thief.rollback();
            thief.close();
        }
    }

    private boolean anotherRelayCouldTakeTheTurn() throws SQLException {
        try (Connection other = db.dataSource.getConnection(); Statement statement = other.createStatement();
             ResultSet rs = statement.executeQuery("SELECT pg_try_advisory_lock(" + OutboxSql.CHOICE_TURN_LOCK_KEY + ", '"
                     + settings.qualifiedTable() + "'::regclass::oid::integer)")) {
            rs.next();
            return rs.getBoolean(1); // a session lock: ends with the connection
        }
    }
}
