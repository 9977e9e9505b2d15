package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.StatementContext;
import org.jdbi.v3.core.statement.StatementCustomizer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Review finding (helper-32, on 76943dd): a held claim whose last statement, the lock of the chosen rows, was
 * answered and then not read for longer than the lease (a pause of the relay, a stalled network) handed out rows its
 * transaction no longer held: PostgreSQL had ended the idle session meanwhile, and another relay had claimed and sent
 * the rows. Before 76943dd a claim that held the turn sent one more statement (the end of the turn), which found the
 * session gone; a claim without the turn had the gap already. The pause is simulated here right after the lock
 * statement ran, before its rows are read. The claim now asks whether its transaction still holds when its last
 * answer took half the lease or more, and fails when it does not.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class PostgresLateLockResultTurnEndReviewTest {

    private static final Duration LEASE = Duration.ofSeconds(1);
    /** The statement that locks the chosen rows, ending the turn or not. */
    private static final String LOCK = " o WHERE o.event_id = ANY(:ids) AND ";

    private TestDatabase db;
    private PostgresOutboxSettings settings;

    @BeforeEach
    void schema() {
        db = TestDatabase.withFreshSchema("turnendlate");
        settings = db.settings().holdRowLocks(true).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
    }

    @AfterEach
    void drop() {
        db.endHeldClaims();
        db.close();
    }

    private static ClaimRequest ordered(int maxRows, Duration lease) {
        return new ClaimRequest("relay", maxRows, lease, Ordering.PER_AGGREGATE, ParkingPolicy.HOLD_AGGREGATE);
    }

    private static List<UUID> ids(ClaimBatch batch) {
        return batch.deliveries().stream().map(ClaimedDelivery::eventId).toList();
    }

    /** A claim that held the turn among processes (its store's previous claim came back full). */
    @Test
    void aTurnHoldingClaimWhoseLockResultArrivesAfterItsSessionEndedHandsOutNothing() throws Exception {
        lateLockResult(true);
    }

    /** The same without the turn (an idle relay's claim): a gap 30a05ee had already. */
    @Test
    void aClaimWithoutTheTurnWhoseLockResultArrivesAfterItsSessionEndedHandsOutNothing() throws Exception {
        lateLockResult(false);
    }

    private void lateLockResult(boolean withTurn) throws Exception {
        AtomicBoolean pauseAfterNextLock = new AtomicBoolean();
        AtomicBoolean lockEndedTheTurn = new AtomicBoolean();
        AtomicReference<Integer> pausedPid = new AtomicReference<>();
        List<UUID> sentByB = new ArrayList<>();
        OutboxStore relayB = PostgresOutbox.store(db.dataSource, settings);
        Jdbi jdbiA = Jdbi.create(db.dataSource);
        jdbiA.addCustomizer(new StatementCustomizer() {
            @Override
            public void afterExecution(PreparedStatement stmt, StatementContext ctx) throws SQLException {
                String sql = ctx.getRenderedSql();
                if (!sql.contains(LOCK) || !pauseAfterNextLock.compareAndSet(true, false)) {
                    return;
                }
                lockEndedTheTurn.set(sql.contains("pg_advisory_unlock(" + OutboxSql.CHOICE_TURN_LOCK_KEY));
                pausedPid.set(stmt.getConnection().unwrap(org.postgresql.PGConnection.class).getBackendPID());
                // Relay A pauses with the lock's answer unread; PostgreSQL ends its idle session after the lease, and
                // relay B claims and sends the rows meanwhile.
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (System.nanoTime() < until && !sentByB.contains(sentByBTarget.get())) {
                    try {
                        ClaimBatch batch = relayB.claim(ordered(2, Duration.ofSeconds(30)));
                        relayB.markSent(batch.lease(), ids(batch));
                        sentByB.addAll(ids(batch));
                        Thread.sleep(batch.isEmpty() ? 50 : 0);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                }
            }
        });
        OutboxStore relayA = PostgresOutbox.store(jdbiA, settings);
        if (withTurn) {
            UUID warm = db.insertRow(settings, "warm", "created", "{}");
            ClaimBatch full = relayA.claim(ordered(1, Duration.ofSeconds(30)));
            assertThat(ids(full)).containsExactly(warm);
            relayA.markSent(full.lease(), ids(full));
        }
        UUID a1 = db.insertRow(settings, "a", "created", "{}");
        UUID a2 = db.insertRow(settings, "a", "updated", "{}");
        sentByBTarget.set(a1);
        pauseAfterNextLock.set(true);

        assertThatThrownBy(() -> relayA.claim(ordered(1, LEASE)))
                .as("relay A's claim, whose session PostgreSQL ended while the lock's answer lay unread")
                .hasMessageContaining("ended before its rows were handed out");

        assertThat(pauseAfterNextLock).as("relay A's lock statement ran").isFalse();
        assertThat(lockEndedTheTurn.get()).as("the lock statement ended the turn").isEqualTo(withTurn);
        assertThat(sessionAlive(pausedPid.get())).as("relay A's session after its pause").isFalse();
        assertThat(sentByB).as("rows relay B claimed and sent while relay A paused").containsExactly(a1, a2);
        assertThat(db.columnOf(settings, a1, "status")).isEqualTo("sent");
    }

    private final AtomicReference<UUID> sentByBTarget = new AtomicReference<>();

    private boolean sessionAlive(int pid) throws SQLException {
        try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_stat_activity WHERE pid = " + pid)) {
            rs.next();
            return rs.getLong(1) > 0;
        }
    }
}
