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
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * The held unordered claim locks and reads its rows in one statement. Rows changed and committed after that
 * statement's snapshot, before it reached them (it is stalled sending the rows before them), must be read at their
 * latest version, and checked again: a row parked or put in backoff meanwhile is not claimed, a changed one comes
 * with its new attempts and headers, none twice. (Review of cf37699.)
 */
class PostgresHeldClaimLatestVersionTest {

    @Test
    void rowsChangedMidStatementAreReadAtTheirLatestVersion() throws Exception {
        try (TestDatabase db = TestDatabase.withFreshSchema("epq"); TcpProxy proxy = ProxiedRelay.proxy()) {
            PostgresOutboxSettings settings = db.settings().holdRowLocks(true).build();
            PostgresOutbox.createSchema(db.dataSource, settings);
            String t = settings.qualifiedTable();
            db.execute("INSERT INTO " + t + " (event_id, aggregate_type, aggregate_id, event_type, payload)"
                    + " SELECT gen_random_uuid(), 'order', 'a' || g, 'OrderPlaced', decode(repeat('ab', 900000), 'hex')"
                    + " FROM generate_series(1, 30) g");
            OutboxStore frozen = PostgresOutbox.store(ProxiedRelay.through(proxy, "epq-relay"), settings);
            proxy.freezeClientAfter(1_000_000);
            CompletableFuture<ClaimBatch> claim = CompletableFuture.supplyAsync(() -> frozen.claim(new ClaimRequest(
                    "epq", 100, Duration.ofSeconds(60), Ordering.NONE, ParkingPolicy.values()[0])));
            Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> count(db,
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'epq-relay' AND wait_event = 'ClientWrite'") == 1);
            // Not yet locked by the claim (lock_timeout proves it): change them and commit.
            db.execute("SET lock_timeout = '200ms'; UPDATE " + t + " SET attempts = 7, last_error = 'changed',"
                    + " headers = '{\"v\": \"2\"}' WHERE seq = (SELECT max(seq) FROM " + t + ")");
            db.execute("SET lock_timeout = '200ms'; UPDATE " + t + " SET status = 'parked' WHERE seq = (SELECT seq FROM " + t + " ORDER BY seq DESC OFFSET 1 LIMIT 1)");
            db.execute("SET lock_timeout = '200ms'; UPDATE " + t + " SET next_attempt_at = now() + interval '1 hour'"
                    + " WHERE seq = (SELECT seq FROM " + t + " ORDER BY seq DESC OFFSET 2 LIMIT 1)");
            proxy.restore();
            ClaimBatch batch = claim.get(60, TimeUnit.SECONDS);
            Map<Long, ClaimedDelivery> bySeq = new HashMap<>();
            long max = count(db, "SELECT max(seq) FROM " + t);
            for (ClaimedDelivery d : batch.deliveries()) {
                assertThat(bySeq.put(d.sequence(), d)).as("twice").isNull();
            }
            assertThat(bySeq.keySet()).hasSize(28).contains(max).doesNotContain(max - 2, max - 4);
            assertThat(bySeq.get(max).attempts()).isEqualTo(7);
            assertThat(bySeq.get(max).event().headers()).containsEntry("v", "2");
            frozen.release(batch.lease(), batch.deliveries().stream().map(ClaimedDelivery::eventId).toList());
        }
    }

    private static long count(TestDatabase db, String sql) throws Exception {
        try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
