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
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A relay that reads the rows of its held claim slowly but steadily (a starved JVM on an overloaded host: four relay
 * JVMs, PostgreSQL and RabbitMQ on two cores in the scale-out bench). Its claim statement then runs longer than the
 * lease while PostgreSQL, at any instant, may be blocked writing to it ({@code ClientWrite}). The other relays' claims
 * end sessions that wait on their client longer than their lease, and measured that from the statement's start
 * ({@code state_change}): they ended this live claim, whose rows were then claimed again and published twice (the
 * scale-out bench: 3 sessions ended, 1,322 events delivered twice). A relay that stops reading is bounded by
 * {@code tcp_user_timeout} ({@link PostgresHeldClaimFrozenRelayTest}); the other claims end only sessions stalled in
 * the middle of a statement's messages ({@code ClientRead}).
 */
class PostgresHeldClaimSlowReaderTest {

    private static final int ROWS = 30;
    private static final int PAYLOAD_BYTES = 900_000;
    private static final Duration LEASE = Duration.ofSeconds(1);
    /**
     * What the slow relay reads every 100 ms: the rows, about 54 MB as sent (hex), take about 7 s at 8 MB/s, more than
     * three leases and less than the ten after which a statement blocked sending counts as stalled. Fast enough that
     * what the socket buffers still hold once PostgreSQL has sent the last row reaches the relay well within the
     * lease: the transaction is idle from then on, and its idle timeout is the lease.
     */
    private static final int BYTES_PER_TICK = 800_000;

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    /** The other relay's outbox: empty, so that its claims take none of the rows the slow claim has not locked yet. */
    private TestDatabase otherDb;
    private PostgresOutboxSettings otherSettings;
    private TcpProxy proxy;

    @BeforeEach
    void schema() throws Exception {
        db = TestDatabase.withFreshSchema("slowreader");
        settings = db.settings().holdRowLocks(true).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        db.execute("INSERT INTO " + settings.qualifiedTable() + " (event_id, aggregate_type, aggregate_id, event_type,"
                + " payload) SELECT gen_random_uuid(), 'order', 'a' || g, 'OrderPlaced',"
                + " decode(repeat('ab', " + PAYLOAD_BYTES + "), 'hex') FROM generate_series(1, " + ROWS + ") g");
        otherDb = TestDatabase.withFreshSchema("slowreaderother");
        otherSettings = otherDb.settings().holdRowLocks(true).build();
        PostgresOutbox.createSchema(otherDb.dataSource, otherSettings);
        proxy = ProxiedRelay.proxy();
    }

    @AfterEach
    void drop() {
        proxy.close();
        db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid()"
                + " AND application_name = 'slow-relay'");
        db.close();
        otherDb.close();
    }

    @Test
    void aClaimReadSlowlyPastItsLeaseIsNotEndedByTheOtherRelaysClaims() throws Exception {
        OutboxStore slow = PostgresOutbox.store(ProxiedRelay.through(proxy, "slow-relay"), settings);
        OutboxStore other = PostgresOutbox.store(otherDb.dataSource, otherSettings);
        AtomicBoolean reading = new AtomicBoolean(true);
        proxy.freezeClientAfter(BYTES_PER_TICK);
        Thread reader = new Thread(() -> {
            while (reading.get()) {
                try {
                    TimeUnit.MILLISECONDS.sleep(100);
                } catch (InterruptedException e) {
                    return;
                }
                proxy.freezeClientAfter(BYTES_PER_TICK);
            }
        }, "slow-relay-reads");
        reader.setDaemon(true);
        reader.start();
        try {
            CompletableFuture<ClaimBatch> claim = CompletableFuture.supplyAsync(() -> slow.claim(request("slow")));
            Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> blockedSending() == 1);
            long started = System.nanoTime();
            // The other relay, idle, claims every 200 ms for three leases, and at least 10 times (a cold JVM's first
            // claims are slow), while the slow one still reads: its ordered claims end the sessions they take for
            // stalled (an idle ordered claim is the one statement that does).
            int otherClaims = 0;
            while ((System.nanoTime() - started < 3 * LEASE.toNanos() || otherClaims <= 10) && !claim.isDone()) {
                assertThat(other.claim(orderedRequest("other")).isEmpty()).as("the other relay's empty outbox").isTrue();
                otherClaims++;
                TimeUnit.MILLISECONDS.sleep(200);
            }
            assertThat(claim).as("the slow relay's claim, still being read three leases on").isNotDone();
            assertThat(otherClaims).as("claims of the other relay").isGreaterThan(10);
            ClaimBatch batch = claim.get(60, TimeUnit.SECONDS);
            assertThat(ids(batch)).as("rows of the slow relay's claim").hasSize(ROWS);
            assertThat(slow.markSent(batch.lease(), ids(batch))).as("the slow claim's outcome").isEqualTo(ROWS);
        } finally {
            reading.set(false);
            reader.interrupt();
            proxy.freezeClientAfter(Long.MAX_VALUE);
        }
    }

    private static List<UUID> ids(ClaimBatch batch) {
        return batch.deliveries().stream().map(ClaimedDelivery::eventId).toList();
    }

    /** Backends of the slow relay that PostgreSQL is blocked in writing to. */
    private long blockedSending() throws Exception {
        try (Connection connection = db.dataSource.getConnection(); Statement statement = connection.createStatement();
             ResultSet rs = statement.executeQuery("SELECT count(*) FROM pg_stat_activity"
                     + " WHERE application_name = 'slow-relay' AND wait_event = 'ClientWrite'")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static ClaimRequest orderedRequest(String owner) {
        return new ClaimRequest(owner, ROWS, LEASE, Ordering.PER_AGGREGATE, ParkingPolicy.HOLD_AGGREGATE);
    }

    private static ClaimRequest request(String owner) {
        return new ClaimRequest(owner, ROWS, LEASE, Ordering.NONE, ParkingPolicy.HOLD_AGGREGATE);
    }
}
