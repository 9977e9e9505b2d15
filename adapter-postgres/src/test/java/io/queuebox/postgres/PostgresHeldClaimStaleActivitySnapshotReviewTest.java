package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import io.queuebox.testkit.services.TestServices;
import java.lang.reflect.Field;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Review of ENDS_STALLED (uncommitted change: one lease for ClientRead, ten otherwise). PostgreSQL caches
 * pg_stat_activity's state, state_change and backend_xid for the rest of the reading transaction (the backend-status
 * snapshot), while wait_event is read live from PGPROC. A held claim evaluates ENDS_STALLED once per round, and its
 * rounds (after parking, after losing chosen rows) run in one transaction for up to a quarter of the lease: the later
 * rounds see a stale state 'active' and a stale state_change next to a live wait_event. A live claim that was in the
 * middle of a statement at the first round (here pg_sleep; in the bench, a slow ClientWrite that the change now
 * lets run ten leases) and is idle in transaction by the second (waiting on ClientRead, as every idle session does)
 * is ended by the one-lease ClientRead rule although it has been idle for milliseconds.
 */
class PostgresHeldClaimStaleActivitySnapshotReviewTest {

    private static final String APP = "stale-snapshot-victim";

    @Test
    void aLaterRoundOfOneClaimTransactionDoesNotEndAClaimThatIsNowIdleInTransaction() throws Exception {
        Field f = OutboxSql.class.getDeclaredField("ENDS_STALLED");
        f.setAccessible(true);
        String endsStalled = "SELECT " + f.get(null);

        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL(TestServices.postgresUrl());
        PGSimpleDataSource victimDs = new PGSimpleDataSource();
        victimDs.setURL(TestServices.postgresUrl());
        victimDs.setApplicationName(APP);
        try (Connection victim = victimDs.getConnection(); Connection killer = ds.getConnection()) {
            victim.setAutoCommit(false);
            try (Statement s = victim.createStatement()) {
                // A held claim with a 1 s lease (the marker) and a transaction id.
                s.execute("SELECT pg_try_advisory_xact_lock_shared(" + OutboxSql.HELD_CLAIM_LOCK_KEY + ", 1000),"
                        + " txid_current()");
            }
            // The victim runs a statement for 2.5 s (active, not waiting on its client).
            CompletableFuture<Void> running = CompletableFuture.runAsync(() -> {
                try (Statement s = victim.createStatement()) {
                    s.execute("SELECT pg_sleep(2.5)");
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            TimeUnit.MILLISECONDS.sleep(1_700);

            killer.setAutoCommit(false);
            try (Statement s = killer.createStatement()) {
                // Round 1 of the killer's claim: the victim is active, waiting on a timeout, not its client: left alone.
                s.execute(endsStalled);
                running.get(5, TimeUnit.SECONDS);
                // The victim is now idle in transaction, alive, well within its idle timeout (1 s).
                TimeUnit.MILLISECONDS.sleep(100);
                assertThat(liveState(ds)).isEqualTo("idle in transaction");
                // Round 2 of the same claim transaction.
                s.execute(endsStalled);
            }
            killer.rollback();

            assertThatCode(() -> {
                try (Statement s = victim.createStatement(); ResultSet rs = s.executeQuery("SELECT 1")) {
                    rs.next();
                }
            }).as("the victim's claim, idle in transaction for 0.1 s of its 1 s lease, is still alive")
                    .doesNotThrowAnyException();
        }
    }

    private static String liveState(PGSimpleDataSource ds) throws Exception {
        try (Connection c = ds.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT state FROM pg_stat_activity WHERE application_name = '" + APP + "'")) {
            return rs.next() ? rs.getString(1) : null;
        }
    }
}
