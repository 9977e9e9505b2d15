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
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A relay that freezes (SIGSTOP, a stalled VM) while PostgreSQL is still sending it the rows of a held claim. The
 * claim's transaction is not idle then, so its idle timeout never runs: PostgreSQL is blocked writing to a socket
 * whose peer's kernel still answers with a zero window. The rows must still come free within about the lease, as
 * they would with a lease written on them.
 */
class PostgresHeldClaimFrozenRelayTest {

    private static final int ROWS = 30;
    /** Each row's payload; the rows together are far more than the socket buffers on both sides hold. */
    private static final int PAYLOAD_BYTES = 900_000;
    private static final Duration LEASE = Duration.ofSeconds(2);
    /** The lease, then TCP's next zero-window probe (backing off from 200 ms) that finds the time passed. */
    private static final Duration FREED_WITHIN = Duration.ofSeconds(8);

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private TcpProxy proxy;

    @BeforeEach
    void schema() throws Exception {
        db = TestDatabase.withFreshSchema("frozen");
        settings = db.settings().holdRowLocks(true).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        db.execute("INSERT INTO " + settings.qualifiedTable() + " (event_id, aggregate_type, aggregate_id, event_type,"
                + " payload) SELECT gen_random_uuid(), 'order', 'a' || g, 'OrderPlaced',"
                + " decode(repeat('ab', " + PAYLOAD_BYTES + "), 'hex') FROM generate_series(1, " + ROWS + ") g");
        proxy = ProxiedRelay.proxy();
    }

    @AfterEach
    void drop() {
        proxy.close();
        db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid()"
                + " AND application_name = 'frozen-relay'");
        db.close();
    }

    @Test
    void theRowsOfARelayFrozenMidResultAreClaimableAfterAboutTheLease() throws Exception {
        OutboxStore frozen = PostgresOutbox.store(ProxiedRelay.through(proxy, "frozen-relay"), settings);
        OutboxStore other = PostgresOutbox.store(db.dataSource, settings);
        // The claim's first small answers pass; the rows themselves stop after the first megabyte.
        proxy.freezeClientAfter(1_000_000);
        CompletableFuture<ClaimBatch> stuck = CompletableFuture.supplyAsync(() -> frozen.claim(request("frozen")));

        // PostgreSQL holds the locks of the rows it has read so far and is blocked sending them (the statement that
        // locks the rows also returns them, so the rows after those are not locked yet: anybody may take them).
        Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> blockedSending() == 1);
        long frozenAt = System.nanoTime();
        Set<UUID> frozenHolds = rowsLockedByTheFrozenRelay();
        assertThat(frozenHolds).as("rows the frozen claim has locked").isNotEmpty();
        Set<UUID> claimed = new HashSet<>(ids(other.claim(request("other"))));
        assertThat(claimed).as("rows taken while the frozen claim holds them").doesNotContainAnyElementsOf(frozenHolds);

        long deadline = frozenAt + FREED_WITHIN.toNanos();
        while (!claimed.containsAll(frozenHolds) && System.nanoTime() < deadline) {
            List<UUID> batch = ids(other.claim(request("other")));
            claimed.addAll(batch);
            if (batch.isEmpty()) {
                TimeUnit.MILLISECONDS.sleep(200);
            }
        }
        assertThat(claimed).as("rows another relay could claim within %s of the freeze (lease %s)", FREED_WITHIN, LEASE)
                .containsAll(frozenHolds).hasSize(ROWS);
        proxy.close();
        assertThat(stuck).failsWithin(Duration.ofSeconds(30));
    }

    /** The rows whose row lock the frozen relay's transaction holds: their xmax is its transaction id. */
    private Set<UUID> rowsLockedByTheFrozenRelay() throws Exception {
        Set<UUID> ids = new HashSet<>();
        try (Connection connection = db.dataSource.getConnection(); Statement statement = connection.createStatement();
             ResultSet rs = statement.executeQuery("SELECT o.event_id FROM " + settings.qualifiedTable() + " o"
                     + " WHERE o.xmax::text = (SELECT a.backend_xid::text FROM pg_stat_activity a"
                     + " WHERE a.application_name = 'frozen-relay' AND a.backend_xid IS NOT NULL)")) {
            while (rs.next()) {
                ids.add(rs.getObject(1, UUID.class));
            }
        }
        return ids;
    }

    private static List<UUID> ids(ClaimBatch batch) {
        return batch.deliveries().stream().map(ClaimedDelivery::eventId).toList();
    }

    /** Backends of the frozen relay that PostgreSQL is blocked in writing to. */
    private long blockedSending() throws Exception {
        try (Connection connection = db.dataSource.getConnection(); Statement statement = connection.createStatement();
             ResultSet rs = statement.executeQuery("SELECT count(*) FROM pg_stat_activity"
                     + " WHERE application_name = 'frozen-relay' AND wait_event = 'ClientWrite'")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static ClaimRequest request(String owner) {
        return new ClaimRequest(owner, ROWS, LEASE, Ordering.NONE, ParkingPolicy.HOLD_AGGREGATE);
    }
}
