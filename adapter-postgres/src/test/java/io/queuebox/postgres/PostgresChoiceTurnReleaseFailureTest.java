package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
import java.util.concurrent.atomic.AtomicBoolean;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.StatementContext;
import org.jdbi.v3.core.statement.StatementCustomizer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Review finding (d105a52): {@code Choice.end()} took a failed release of the turn for a failed transaction, rolled
 * the claim's transaction back and went on: a choice and lock that had succeeded lost their row locks, and the claim
 * handed out rows it no longer held. Any failure of that one statement on a live connection did it (a cancel, a
 * client-side timeout; injected here). The claim now fails instead, its connection aborted.
 */
class PostgresChoiceTurnReleaseFailureTest {

    private TestDatabase db;
    private PostgresOutboxSettings settings;

    @BeforeEach
    void schema() {
        db = TestDatabase.withFreshSchema("turnrelease");
        settings = db.settings().holdRowLocks(true).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
    }

    @AfterEach
    void drop() {
        db.endHeldClaims();
        db.close();
    }

    private static ClaimRequest ordered(String owner, int maxRows) {
        return new ClaimRequest(owner, maxRows, Duration.ofSeconds(30), Ordering.PER_AGGREGATE,
                ParkingPolicy.HOLD_AGGREGATE);
    }

    private static List<UUID> ids(ClaimBatch batch) {
        return batch.deliveries().stream().map(ClaimedDelivery::eventId).toList();
    }

    /**
     * Found by review (helper, on d105a52): the failed release rolled the claim's transaction back and handed out a1
     * without its lock, so relay B claimed a1 and a2 while relay A published a1. Now the claim fails, its connection
     * aborted (the session's end gives the turn back): nothing is handed out without its lock.
     */
    @Test
    void aClaimWhoseTurnReleaseFailsHandsOutNothing() throws Exception {
        Fixture fixture = fixture();
        fixture.failNextRelease.set(true);
        assertThatThrownBy(() -> fixture.relayA.claim(ordered("relay-a", 1))).hasRootCauseMessage("canceling statement due to user request");
        assertThat(fixture.failNextRelease).as("the release of relay A's turn failed once").isFalse();

        ClaimBatch batchB = fixture.relayB.claim(ordered("relay-b", 2));
        assertThat(ids(batchB)).as("relay A handed out nothing: its rows are relay B's").containsExactly(fixture.a1, fixture.a2);
        fixture.relayB.markSent(batchB.lease(), ids(batchB));
    }

    /** Control: with a release that succeeds, relay A's claim keeps a1 locked while its batch is out. */
    @Test
    void controlAClaimWhoseTurnReleaseSucceedsHoldsTheRowsItHandsOut() throws Exception {
        Fixture fixture = fixture();
        ClaimBatch batchA = fixture.relayA.claim(ordered("relay-a", 1));
        assertThat(ids(batchA)).containsExactly(fixture.a1);
        assertThat(db.lockedByAnyone(settings, fixture.a1)).as("a1 is held by relay A's claim while its batch is out").isTrue();
        assertThat(ids(fixture.relayB.claim(ordered("relay-b", 2)))).doesNotContain(fixture.a1, fixture.a2);
        fixture.relayA.markSent(batchA.lease(), List.of(fixture.a1));
    }

    private record Fixture(AtomicBoolean failNextRelease, OutboxStore relayA, OutboxStore relayB, UUID a1, UUID a2) {
    }

    private Fixture fixture() {
        AtomicBoolean failNextRelease = new AtomicBoolean();
        Jdbi jdbi = Jdbi.create(db.dataSource);
        jdbi.addCustomizer(new StatementCustomizer() {
            @Override
            public void beforeExecution(PreparedStatement stmt, StatementContext ctx) throws SQLException {
                if (ctx.getRenderedSql().contains("pg_advisory_unlock(" + OutboxSql.CHOICE_TURN_LOCK_KEY)
                        && failNextRelease.compareAndSet(true, false)) {
                    // What a cancel that hits the release would raise; the connection and transaction are fine.
                    throw new SQLException("canceling statement due to user request", "57014");
                }
            }
        });
        OutboxStore relayA = PostgresOutbox.store(jdbi, settings);
        OutboxStore relayB = PostgresOutbox.store(db.dataSource, settings);

        // A full claim first, so relay A's next claim takes the turn among processes (backlogSeen).
        UUID first = db.insertRow(settings, "first", "created", "{}");
        ClaimBatch warmUp = relayA.claim(ordered("relay-a", 1));
        assertThat(ids(warmUp)).containsExactly(first);
        relayA.markSent(warmUp.lease(), List.of(first));

        UUID a1 = db.insertRow(settings, "a", "created", "{}");
        UUID a2 = db.insertRow(settings, "a", "updated", "{}");
        return new Fixture(failNextRelease, relayA, relayB, a1, a2);
    }
}
