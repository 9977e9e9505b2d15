package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
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
 * Final review of the held claim's late answers (PostgresLateLockResultTurnEndReviewTest). Promise 3: a store never
 * hands out rows it no longer holds. A lock answered after half the lease makes the claim ask whether its transaction
 * still holds (confirmHolds, a set_config statement); but that question's own answer can lie unread just as long, and
 * nothing looks at how long it took: PostgreSQL restarted the idle countdown when it ran, ends the session a lease
 * later while the answer is still unread, another relay claims and sends the rows, and the claim then hands them out
 * (with a HeldClaim whose deadline, counted from the confirm's send, has already passed).
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class PostgresConfirmAnswerLateFinalReviewTest {

    private static final Duration LEASE = Duration.ofSeconds(1);
    /** The statement that locks the chosen rows. */
    private static final String LOCK = " o WHERE o.event_id = ANY(:ids) AND ";
    /** confirmHolds' statement (OutboxSql.holdFor): the lock statement has it only as a subquery. */
    private static final String HOLD_FOR = "SELECT set_config('idle_in_transaction_session_timeout'";

    private TestDatabase db;
    private PostgresOutboxSettings settings;

    @BeforeEach
    void schema() {
        db = TestDatabase.withFreshSchema("confirmlate");
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

    @Test
    void aClaimWhoseConfirmationAnswerArrivesAfterItsSessionEndedHandsOutNothing() {
        AtomicBoolean armed = new AtomicBoolean();
        AtomicBoolean lockPaused = new AtomicBoolean();
        AtomicBoolean confirmPaused = new AtomicBoolean();
        AtomicReference<UUID> target = new AtomicReference<>();
        List<UUID> sentByB = new CopyOnWriteArrayList<>();
        OutboxStore relayB = PostgresOutbox.store(db.dataSource, settings);
        Jdbi jdbiA = Jdbi.create(db.dataSource);
        jdbiA.addCustomizer(new StatementCustomizer() {
            @Override
            public void afterExecution(PreparedStatement stmt, StatementContext ctx) throws SQLException {
                if (!armed.get()) {
                    return;
                }
                String sql = ctx.getRenderedSql();
                if (sql.contains(LOCK) && lockPaused.compareAndSet(false, true)) {
                    // The lock's answer is read after 0.6 of the lease: late enough for the store to ask whether
                    // its transaction holds (it still does: the session is idle for less than a lease).
                    sleep(600);
                    return;
                }
                if (sql.trim().startsWith(HOLD_FOR) && !sql.contains(LOCK) && lockPaused.get()
                        && confirmPaused.compareAndSet(false, true)) {
                    // The question's answer now lies unread past the lease: PostgreSQL ends the idle session, and
                    // relay B claims and sends the rows meanwhile.
                    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                    while (System.nanoTime() < until && !sentByB.contains(target.get())) {
                        ClaimBatch batch = relayB.claim(ordered(2, Duration.ofSeconds(30)));
                        relayB.markSent(batch.lease(), ids(batch));
                        sentByB.addAll(ids(batch));
                        if (batch.isEmpty()) {
                            sleep(50);
                        }
                    }
                }
            }
        });
        OutboxStore relayA = PostgresOutbox.store(jdbiA, settings);
        UUID a1 = db.insertRow(settings, "a", "created", "{}");
        db.insertRow(settings, "a", "updated", "{}");
        target.set(a1);
        armed.set(true);

        ClaimBatch handedOut = null;
        RuntimeException failure = null;
        try {
            handedOut = relayA.claim(ordered(1, LEASE));
        } catch (RuntimeException e) {
            failure = e;
        }

        assertThat(lockPaused).as("relay A's lock statement ran and was answered late").isTrue();
        assertThat(confirmPaused).as("relay A asked whether its transaction holds (confirmHolds)").isTrue();
        assertThat(sentByB).as("relay B claimed and sent a1 while relay A's question's answer lay unread")
                .contains(a1);
        assertThat(handedOut == null ? List.<UUID>of() : ids(handedOut))
                .as("rows relay A's claim handed out (failure: " + failure + "); a1 is relay B's and sent already")
                .doesNotContainAnyElementsOf(sentByB);
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
