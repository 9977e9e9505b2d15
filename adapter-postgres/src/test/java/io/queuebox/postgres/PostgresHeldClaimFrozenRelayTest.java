package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.testkit.faults.TcpProxy;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
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

        // PostgreSQL holds the rows' locks and is blocked sending them.
        Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> blockedSending() == 1);
        long frozenAt = System.nanoTime();
        assertThat(other.claim(request("other")).deliveries()).as("rows taken while the frozen claim holds them").isEmpty();

        int claimed = 0;
        long deadline = frozenAt + FREED_WITHIN.toNanos();
        while (claimed == 0 && System.nanoTime() < deadline) {
            ClaimBatch batch = other.claim(request("other"));
            claimed = batch.deliveries().size();
            if (claimed == 0) {
                TimeUnit.MILLISECONDS.sleep(200);
            }
        }
        assertThat(claimed).as("rows another relay could claim within %s of the freeze (lease %s)", FREED_WITHIN, LEASE)
                .isEqualTo(ROWS);
        proxy.close();
        assertThat(stuck).failsWithin(Duration.ofSeconds(30));
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
