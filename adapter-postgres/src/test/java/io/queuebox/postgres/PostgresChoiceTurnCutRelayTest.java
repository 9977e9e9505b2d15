package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.testkit.faults.TcpProxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.awaitility.Awaitility;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.StatementContext;
import org.jdbi.v3.core.statement.StatementCustomizer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Review finding (d105a52; fixed in e622773, the turn statement sets the timeouts first): the turn among processes is a session advisory lock taken as the first statement of a
 * held ordered claim's transaction, before the choice statement that sets the transaction's timeouts (HOLDS_FOR:
 * idle_in_transaction_session_timeout, tcp_user_timeout, keepalives). A relay whose host dies or whose network goes
 * silent right after it got its turn leaves a session idle in transaction under the server's defaults (no idle
 * timeout, keepalives after 2 hours): the session, and the turn, are never ended within the lease. Every other
 * relay's held ordered claim then waits out its full bound (a tenth of the lease) in every round, for as long as
 * the dead session lasts, and never gets the turn.
 */
class PostgresChoiceTurnCutRelayTest {

    private static final Duration LEASE = Duration.ofSeconds(2);

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private TcpProxy proxy;

    @BeforeEach
    void schema() throws Exception {
        db = TestDatabase.withFreshSchema("turncut");
        settings = db.settings().holdRowLocks(true).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        proxy = ProxiedRelay.proxy();
    }

    @AfterEach
    void drop() {
        proxy.close();
        db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid()"
                + " AND application_name = 'cut-relay'");
        db.endHeldClaims();
        db.close();
    }

    private static ClaimRequest ordered(String owner) {
        return new ClaimRequest(owner, 1, LEASE, Ordering.PER_AGGREGATE, ParkingPolicy.HOLD_AGGREGATE);
    }

    private static List<UUID> ids(ClaimBatch batch) {
        return batch.deliveries().stream().map(ClaimedDelivery::eventId).toList();
    }

    /** A full claim (maxRows 1), so that the store's next claim takes the turn among processes (backlogSeen). */
    private void fullClaim(OutboxStore store, String owner) {
        UUID row = db.insertRow(settings, "warm-" + owner, "created", "{}");
        ClaimBatch batch = store.claim(ordered(owner));
        assertThat(ids(batch)).containsExactly(row);
        store.markSent(batch.lease(), List.of(row));
    }

    private long turnsHeldBy(String applicationName) throws SQLException {
        try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
                     + " WHERE l.locktype = 'advisory' AND l.classid = " + OutboxSql.CHOICE_TURN_LOCK_KEY
                     + " AND l.granted AND a.application_name = '" + applicationName + "'")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    @Test
    void aRelayThatGoesSilentRightAfterTakingItsTurnStopsDelayingOthersWithinTheLease() throws Exception {
        AtomicBoolean cutAfterTurn = new AtomicBoolean();
        Jdbi cutJdbi = Jdbi.create(ProxiedRelay.through(proxy, "cut-relay"));
        cutJdbi.addCustomizer(new StatementCustomizer() {
            @Override
            public void afterExecution(PreparedStatement stmt, StatementContext ctx) {
                // Taken at once (pg_try_advisory_lock) or in the lock's queue (pg_advisory_lock).
                if (ctx.getRenderedSql().contains("advisory_lock(" + OutboxSql.CHOICE_TURN_LOCK_KEY)
                        && cutAfterTurn.compareAndSet(true, false)) {
                    // The relay's host dies (or its network goes silent) right after the turn was granted.
                    proxy.cut();
                }
            }
        });
        OutboxStore cut = PostgresOutbox.store(cutJdbi, settings);
        OutboxStore other = PostgresOutbox.store(db.dataSource, settings);
        fullClaim(cut, "cut");
        fullClaim(other, "other");

        db.insertRow(settings, "a", "created", "{}");
        cutAfterTurn.set(true);
        CompletableFuture.runAsync(() -> cut.claim(ordered("cut")));
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> turnsHeldBy("cut-relay") == 1);
        long silentAt = System.nanoTime();

        // Rows of a silent relay come free within the lease; wait twice that.
        Thread.sleep(2 * LEASE.toMillis() + 500);

        long started = System.nanoTime();
        ClaimBatch batch = other.claim(ordered("other"));
        long claimMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        long silentMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - silentAt);
        assertThat(batch.size()).as("the other relay claims the row the silent one never chose").isEqualTo(1);
        long stillHeld = turnsHeldBy("cut-relay");

        assertThat(claimMillis).as("another relay's claim of one row, " + silentMillis + " ms after the relay holding"
                + " the turn went silent (lease " + LEASE.toMillis() + " ms); the silent relay still holds the turn: "
                + (stillHeld == 1)).isLessThan(LEASE.toMillis() / 10); // a claim without its turn waits the whole bound
        assertThat(stillHeld).as("turns held by the silent relay's session " + silentMillis + " ms after it went silent"
                + " (lease " + LEASE.toMillis() + " ms)").isZero();
    }
}
