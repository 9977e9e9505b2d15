package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.jdbc.testing.ReusingDataSource;
import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.testkit.services.TestServices;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.StatementContext;
import org.jdbi.v3.core.statement.StatementCustomizer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Review finding (a4d6388; fixed in the next commit: the claim asks whether it holds the turn, and a failure ends its session): a lock_timeout that fires while the waiter is being granted the lock (the holder released
 * it a moment before the timeout, the waiter had not yet woken) fails the statement with 55P03 although PostgreSQL
 * granted the lock (proc.c LockErrorCleanup: GrantAwaitedLock). A session advisory lock survives the rollback, so
 * {@code Choice.takeTurn} takes the claim for one that waited out its bound, never releases the turn, and the
 * connection goes back to the pool holding it: every held ordered claim of every relay then waits out its bound
 * each round, for as long as that pooled session lives (behind PgBouncer, whichever client gets the session).
 */
class PostgresChoiceTurnGrantedAtTimeoutTest {

    private static final Duration LEASE = Duration.ofMillis(500); // the turn's bound: 50 ms
    private static final Pattern WAIT = Pattern.compile("least\\(\\(+'(\\d+)'"); // least((:waitMillis)::bigint, ...), as bound

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private ReusingDataSource pool;
    private Connection other;

    @BeforeEach
    void schema() throws SQLException {
        db = TestDatabase.withFreshSchema("turngrant");
        settings = db.settings().holdRowLocks(true).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        pool = TestDatabase.reusing(TestServices.postgresUrl(), "turngrant-relay");
        other = db.dataSource.getConnection();
    }

    @AfterEach
    void drop() throws SQLException {
        other.close();
        pool.close();
        db.endHeldClaims();
        db.close();
    }

    private static ClaimRequest ordered(String owner, int maxRows) {
        return new ClaimRequest(owner, maxRows, LEASE, Ordering.PER_AGGREGATE, ParkingPolicy.HOLD_AGGREGATE);
    }

    private static List<UUID> ids(ClaimBatch batch) {
        return batch.deliveries().stream().map(ClaimedDelivery::eventId).toList();
    }

    private String turnKeys() {
        return OutboxSql.CHOICE_TURN_LOCK_KEY + ", '" + settings.qualifiedTable() + "'::regclass::oid::integer";
    }

    /** Sessions holding the turn among processes, with their state. */
    private List<String> turnHolders() throws SQLException {
        try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT l.pid || ' ' || a.state || ' ' || a.application_name FROM pg_locks l"
                     + " JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted"
                     + " AND l.classid = " + OutboxSql.CHOICE_TURN_LOCK_KEY + " AND l.objid = '"
                     + settings.qualifiedTable() + "'::regclass::oid AND l.objsubid = 2")) {
            List<String> holders = new java.util.ArrayList<>();
            while (rs.next()) {
                holders.add(rs.getString(1));
            }
            return holders;
        }
    }

    /**
     * Another relay holds the turn and gives it up a moment (0 to 1.5 ms) before the waiting claim's lock_timeout runs
     * out, measured from the waiter's own waitstart in pg_locks; after each claim's batch is sent no session may hold
     * the turn.
     */
    @Test
    void aTurnGrantedAsItsLockTimeoutFiresIsGivenBack() throws Exception {
        AtomicReference<Thread> releaser = new AtomicReference<>();
        AtomicReference<Throwable> releaserFailed = new AtomicReference<>();
        Jdbi jdbi = Jdbi.create(pool);
        jdbi.addCustomizer(new StatementCustomizer() {
            @Override
            public void beforeExecution(PreparedStatement stmt, StatementContext ctx) {
                Matcher wait = WAIT.matcher(stmt.toString());
                if (!ctx.getRenderedSql().contains("pg_advisory_lock(" + OutboxSql.CHOICE_TURN_LOCK_KEY) || !wait.find()) {
                    return;
                }
                double before = ThreadLocalRandom.current().nextDouble(0.0, 1.5);
                String release = "DO $$ DECLARE ws timestamptz; BEGIN"
                        + " FOR i IN 1..10000 LOOP SELECT waitstart INTO ws FROM pg_locks WHERE locktype = 'advisory'"
                        + " AND NOT granted AND classid = " + OutboxSql.CHOICE_TURN_LOCK_KEY + " AND objid = '"
                        + settings.qualifiedTable() + "'::regclass::oid AND objsubid = 2;"
                        + " EXIT WHEN ws IS NOT NULL; PERFORM pg_sleep(0.0001); END LOOP;"
                        + " IF ws IS NOT NULL THEN WHILE clock_timestamp() < ws + (" + wait.group(1) + " - " + before
                        + ") * interval '1 millisecond' LOOP END LOOP; END IF;"
                        + " PERFORM pg_advisory_unlock(" + turnKeys() + "); END $$";
                Thread thread = new Thread(() -> {
                    try (Statement s = other.createStatement()) {
                        s.execute(release);
                    } catch (Throwable e) {
                        releaserFailed.set(e);
                    }
                });
                releaser.set(thread);
                thread.start();
            }
        });
        OutboxStore relay = PostgresOutbox.store(jdbi, settings);
        UUID warm = db.insertRow(settings, "warm", "created", "{}");
        ClaimBatch first = relay.claim(ordered("relay", 1)); // full: the next claims take the turn among processes
        assertThat(ids(first)).containsExactly(warm);
        relay.markSent(first.lease(), ids(first));

        for (int i = 0; i < 150; i++) {
            try (Statement s = other.createStatement()) {
                s.execute("SELECT pg_advisory_lock(" + turnKeys() + ")"); // another relay's turn
            }
            UUID row = db.insertRow(settings, "a" + i, "created", "{}");
            ClaimBatch batch = relay.claim(ordered("relay", 1));
            releaser.get().join(5000);
            assertThat(releaserFailed.get()).isNull();
            assertThat(ids(batch)).containsExactly(row);
            relay.markSent(batch.lease(), ids(batch));
            if (!turnHolders().isEmpty()) {
                Thread.sleep(2 * LEASE.toMillis()); // long past every lease and bound: the turn never comes back
                assertThat(turnHolders()).as("sessions holding the turn %d ms after claim %d ended (its connection"
                        + " back in the pool)", 2 * LEASE.toMillis(), i).isEmpty();
            }
        }
    }
}
