package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.domain.DeliveryEngine;
import io.queuebox.domain.DeliverySettings;
import io.queuebox.domain.RetryPolicy;
import io.queuebox.ports.BacklogStats;
import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.DeliveryListener;
import io.queuebox.ports.Health;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.Park;
import io.queuebox.ports.ParkedEvent;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.ports.ReplaySelector;
import io.queuebox.ports.Reschedule;
import io.queuebox.testkit.services.TestServices;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Review of the pipelined engine's record stage (fb90d82 and later) against the real PostgreSQL store with held row
 * locks (the default): the record stage marks a batch sent on the claim's own open transaction from its own thread,
 * while the publish stage and the claimer use other connections. Each test asserts the engine's promises (order per
 * aggregate, at least once, fencing, publish only while the claim holds, stop by its deadline).
 */
class RecordStagePostgresReviewTest {

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private String application;
    private PGSimpleDataSource relayDataSource;

    @BeforeEach
    void schema() {
        db = TestDatabase.withFreshSchema("recstage");
        settings = db.settings().holdRowLocks(true).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        application = "recstage-" + UUID.randomUUID().toString().substring(0, 8);
        relayDataSource = new PGSimpleDataSource();
        relayDataSource.setURL(TestServices.postgresUrl());
        relayDataSource.setApplicationName(application);
    }

    @AfterEach
    void drop() {
        db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '" + application
                + "' AND pid <> pg_backend_pid()");
        db.endHeldClaims();
        db.close();
    }

    // ------------------------------------------------------------------------------------------------ attacks

    /**
     * Attack 1: the claims' backends are terminated (a) by the record stage's thread right before it sends its
     * markSent (every held claim of the relay that is idle in transaction, so the batch being recorded and the
     * batches queued behind it), and (b) at random moments by a background thread, while two workers at depth 3
     * deliver 40 aggregates of 25 events under a publisher that fails 3 % of its messages retriably.
     */
    @Test
    void killedClaimBackendsAroundTheRecordStageLoseNothingAndKeepOrderPerAggregate() throws Exception {
        Map<String, List<UUID>> expected = writeInterleaved(40, 25);
        int total = expected.values().stream().mapToInt(List::size).sum();
        Random random = new Random(20261207L);
        LoggingPublisher publisher = new LoggingPublisher(0.03, new Random(7));
        ForwardingStore store = new ForwardingStore(PostgresOutbox.store(relayDataSource, settings));
        AtomicInteger recordKills = new AtomicInteger();
        store.beforeMarkSent = (lease, ids) -> {
            if (Thread.currentThread().getName().endsWith("-record") && chance(random, 0.3)) {
                recordKills.addAndGet(killIdleInTransaction());
            }
        };
        Listener listener = new Listener();
        DeliveryEngine engine = engine(store, publisher, listener, 2, 3, 20, Duration.ofSeconds(2));
        AtomicBoolean chaos = new AtomicBoolean(true);
        AtomicInteger backgroundKills = new AtomicInteger();
        Thread killer = new Thread(() -> {
            Random r = new Random(11);
            while (chaos.get()) {
                sleep(100 + r.nextInt(300));
                try {
                    backgroundKills.addAndGet(killIdleInTransaction());
                } catch (RuntimeException ignored) {
                    // the schema may be gone at the end
                }
            }
        }, "test-killer");
        engine.start();
        killer.start();
        Health health = null;
        try {
            // Chaos for a while, then let it settle.
            sleep(8_000);
            chaos.set(false);
            killer.join();
            awaitAllSent(total, Duration.ofSeconds(60));
            sleep(500);
            health = engine.health();
        } finally {
            chaos.set(false);
            boolean inTime = engine.stop(Duration.ofSeconds(10));
            System.out.printf("attack1: record kills %d, background kills %d, lease lost %d, errors %s, publishes %d,"
                            + " duplicates %d, stop in time %s%n", recordKills.get(), backgroundKills.get(),
                    listener.leaseLost.get(), listener.errorsByStep(), publisher.calls.get(), publisher.duplicates(),
                    inTime);
        }
        assertThat(recordKills.get() + backgroundKills.get()).as("backends killed").isPositive();
        assertThat(health.status()).as("health after the chaos: " + health).isEqualTo(Health.Status.UP);
        assertThat(idleInTransaction()).as("claims left open after stop()").isZero();
        assertThat(sentCount()).isEqualTo(total);
        assertThat(publisher.orderViolations(expected)).as("order per aggregate").isEmpty();
        assertThat(publisher.firstDeliveries()).as("every event delivered").hasSize(total);
    }

    /**
     * Attack 2: the record stage's markSent hangs: another session takes {@code LOCK TABLE ... IN SHARE MODE} (as a
     * plain CREATE INDEX does) for longer than the lease, so every UPDATE of the outbox waits while claims (row locks
     * only) go on. Nothing may be published whose claim no longer holds: at publish time every row of the batch must
     * still be pending and locked by some transaction (the batch's own claim), never already sent by another.
     */
    @Test
    void aMarkSentThatWaitsOnATableLockNeverLetsABatchBePublishedAfterItsClaimEnded() throws Exception {
        Map<String, List<UUID>> expected = writeInterleaved(30, 20);
        int total = expected.values().stream().mapToInt(List::size).sum();
        LoggingPublisher publisher = new LoggingPublisher(0.0, new Random(3));
        publisher.checkRowsAtPublish = true;
        publisher.delay = Duration.ofMillis(20);
        ForwardingStore store = new ForwardingStore(PostgresOutbox.store(relayDataSource, settings));
        Listener listener = new Listener();
        DeliveryEngine engine = engine(store, publisher, listener, 2, 3, 10, Duration.ofSeconds(2));
        engine.start();
        long stopTook;
        boolean inTime;
        try {
            awaitSentAtLeast(50, Duration.ofSeconds(20));
            try (Connection locker = db.dataSource.getConnection(); Statement s = locker.createStatement()) {
                locker.setAutoCommit(false);
                s.execute("LOCK TABLE " + settings.qualifiedTable() + " IN SHARE MODE");
                sleep(6_000); // three leases
                locker.commit();
            }
            awaitAllSent(total, Duration.ofSeconds(60));
        } finally {
            long before = System.nanoTime();
            inTime = engine.stop(Duration.ofSeconds(10));
            stopTook = (System.nanoTime() - before) / 1_000_000;
            System.out.printf("attack2: lease lost %d, errors %s, publishes %d, duplicates %d, stale publishes %s,"
                            + " stop in time %s after %d ms%n", listener.leaseLost.get(), listener.errorsByStep(),
                    publisher.calls.get(), publisher.duplicates(), publisher.stalePublishes, inTime, stopTook);
        }
        assertThat(publisher.stalePublishes).as("batches published while their rows were not held by a claim").isEmpty();
        assertThat(publisher.orderViolations(expected)).as("order per aggregate").isEmpty();
        assertThat(sentCount()).isEqualTo(total);
        assertThat(inTime).isTrue();
    }

    /**
     * Attack 3: stop() while the record stage's markSent waits (the table lock of attack 2 held past the shutdown
     * deadline): stop() returns by its deadline, and once the lock goes, every row is either sent or claimable, and a
     * second engine delivers the rest in order.
     */
    @Test
    void stopWhileTheRecordStageWaitsReturnsByItsDeadlineAndLosesNothing() throws Exception {
        Map<String, List<UUID>> expected = writeInterleaved(20, 20);
        int total = expected.values().stream().mapToInt(List::size).sum();
        LoggingPublisher publisher = new LoggingPublisher(0.0, new Random(5));
        publisher.delay = Duration.ofMillis(20);
        ForwardingStore store = new ForwardingStore(PostgresOutbox.store(relayDataSource, settings));
        Listener listener = new Listener();
        DeliveryEngine engine = engine(store, publisher, listener, 2, 3, 10, Duration.ofSeconds(3));
        engine.start();
        long stopTook;
        boolean inTime;
        awaitSentAtLeast(40, Duration.ofSeconds(20));
        try (Connection locker = db.dataSource.getConnection(); Statement s = locker.createStatement()) {
            locker.setAutoCommit(false);
            s.execute("LOCK TABLE " + settings.qualifiedTable() + " IN SHARE MODE");
            sleep(500);
            long before = System.nanoTime();
            inTime = engine.stop(Duration.ofSeconds(2));
            stopTook = (System.nanoTime() - before) / 1_000_000;
            locker.commit();
        }
        System.out.printf("attack3: stop in time %s after %d ms, sent %d of %d, errors %s%n", inTime, stopTook,
                sentCount(), total, listener.errorsByStep());
        assertThat(stopTook).as("stop() returns by its deadline").isLessThan(3_000);
        Listener second = new Listener();
        DeliveryEngine next = engine(PostgresOutbox.store(relayDataSource, settings), publisher, second, 2, 3, 10,
                Duration.ofSeconds(3));
        next.start();
        try {
            awaitAllSent(total, Duration.ofSeconds(60));
        } finally {
            assertThat(next.stop(Duration.ofSeconds(10))).isTrue();
        }
        assertThat(publisher.orderViolations(expected)).as("order per aggregate").isEmpty();
        assertThat(publisher.firstDeliveries()).hasSize(total);
    }

    /**
     * Attack 4: order per aggregate with depth 3 and two workers under a publisher that fails 10 % of its messages
     * retriably, on the real store's retry and backoff; a few aggregates only, so batches of one aggregate follow one
     * another closely on the record stage.
     */
    @Test
    void orderPerAggregateHoldsAtDepthThreeWithTwoWorkersAndRandomFailures() throws Exception {
        Map<String, List<UUID>> expected = writeInterleaved(6, 150);
        int total = expected.values().stream().mapToInt(List::size).sum();
        LoggingPublisher publisher = new LoggingPublisher(0.10, new Random(99));
        Listener listener = new Listener();
        DeliveryEngine engine = engine(PostgresOutbox.store(relayDataSource, settings), publisher, listener, 2, 3, 10,
                Duration.ofSeconds(5));
        engine.start();
        Health health;
        try {
            awaitAllSent(total, Duration.ofSeconds(90));
            health = engine.health();
        } finally {
            assertThat(engine.stop(Duration.ofSeconds(10))).isTrue();
        }
        System.out.printf("attack4: publishes %d, failures %d, duplicates %d, errors %s, lease lost %d%n",
                publisher.calls.get(), publisher.failures.get(), publisher.duplicates(), listener.errorsByStep(),
                listener.leaseLost.get());
        assertThat(publisher.failures.get()).isPositive();
        assertThat(publisher.orderViolations(expected)).as("order per aggregate").isEmpty();
        assertThat(publisher.firstDeliveries()).hasSize(total);
        assertThat(health.status()).isEqualTo(Health.Status.UP);
    }

    /**
     * Attack 5: claims that write leases (holdRowLocks false): the record stage's markSent is held on its thread for
     * longer than the lease (a slow database), while the publish stage has batches queued behind it. At publish time
     * every row of a batch must still be pending, leased by that batch's token, and the lease not expired; and the
     * engine must deliver everything once the slowness ends.
     */
    @Test
    void leasedClaimsASlowRecordStageNeverLetsAStaleBatchBePublished() throws Exception {
        settings = db.settings().holdRowLocks(false).build();
        Map<String, List<UUID>> expected = writeInterleaved(30, 20);
        int total = expected.values().stream().mapToInt(List::size).sum();
        LoggingPublisher publisher = new LoggingPublisher(0.02, new Random(13));
        publisher.checkLeaseAtPublish = true;
        publisher.delay = Duration.ofMillis(10);
        ForwardingStore store = new ForwardingStore(PostgresOutbox.store(relayDataSource, settings));
        AtomicInteger slowed = new AtomicInteger();
        AtomicBoolean slow = new AtomicBoolean(true);
        store.beforeMarkSent = (lease, ids) -> {
            if (slow.get() && Thread.currentThread().getName().endsWith("-record") && slowed.incrementAndGet() % 4 == 0) {
                sleep(2_500);
            }
        };
        Listener listener = new Listener();
        DeliveryEngine engine = engine(store, publisher, listener, 2, 3, 10, Duration.ofSeconds(2));
        engine.start();
        boolean inTime;
        try {
            sleep(8_000);
            slow.set(false);
            awaitAllSent(total, Duration.ofSeconds(60));
        } finally {
            inTime = engine.stop(Duration.ofSeconds(10));
            System.out.printf("attack5: slowed %d, lease lost %d, errors %s, publishes %d, duplicates %d, stale %s%n",
                    slowed.get() / 4, listener.leaseLost.get(), listener.errorsByStep(), publisher.calls.get(),
                    publisher.duplicates(), publisher.stalePublishes);
        }
        assertThat(publisher.stalePublishes).as("batches published without a live lease of their own").isEmpty();
        assertThat(publisher.orderViolations(expected)).as("order per aggregate").isEmpty();
        assertThat(sentCount()).isEqualTo(total);
        assertThat(inTime).isTrue();
    }

    /**
     * Attack 6: two relays (engines), each two workers at depth 3, on one held-lock table, a publisher failing 5 %
     * retriably, and claims' backends killed at random (idle in transaction) and right before record-stage marks.
     */
    @Test
    void twoRelaysWithKilledClaimsAndRandomFailuresKeepOrderAndLoseNothing() throws Exception {
        Map<String, List<UUID>> expected = writeInterleaved(25, 40);
        int total = expected.values().stream().mapToInt(List::size).sum();
        Random random = new Random(31);
        LoggingPublisher publisher = new LoggingPublisher(0.05, new Random(17));
        ForwardingStore storeA = new ForwardingStore(PostgresOutbox.store(relayDataSource, settings));
        ForwardingStore storeB = new ForwardingStore(PostgresOutbox.store(relayDataSource, settings));
        AtomicInteger kills = new AtomicInteger();
        AtomicBoolean chaos = new AtomicBoolean(true);
        BiConsumer<LeaseToken, Collection<UUID>> hook = (lease, ids) -> {
            if (chaos.get() && Thread.currentThread().getName().endsWith("-record") && chance(random, 0.2)) {
                kills.addAndGet(killIdleInTransaction());
            }
        };
        storeA.beforeMarkSent = hook;
        storeB.beforeMarkSent = hook;
        Listener listener = new Listener();
        DeliveryEngine a = engine(storeA, publisher, listener, 2, 3, 15, Duration.ofSeconds(2));
        DeliveryEngine b = engine(storeB, publisher, listener, 2, 3, 15, Duration.ofSeconds(2));
        Thread killer = new Thread(() -> {
            Random r = new Random(23);
            while (chaos.get()) {
                sleep(150 + r.nextInt(400));
                try {
                    kills.addAndGet(killIdleInTransaction());
                } catch (RuntimeException ignored) {
                    // gone at the end
                }
            }
        }, "test-killer-2");
        a.start();
        b.start();
        killer.start();
        Health healthA = null;
        Health healthB = null;
        try {
            sleep(8_000);
            chaos.set(false);
            killer.join();
            awaitAllSent(total, Duration.ofSeconds(60));
            sleep(500);
            healthA = a.health();
            healthB = b.health();
        } finally {
            chaos.set(false);
            boolean inA = a.stop(Duration.ofSeconds(10));
            boolean inB = b.stop(Duration.ofSeconds(10));
            System.out.printf("attack6: kills %d, lease lost %d, errors %s, publishes %d, failures %d, duplicates %d,"
                            + " stop %s/%s%n", kills.get(), listener.leaseLost.get(), listener.errorsByStep(),
                    publisher.calls.get(), publisher.failures.get(), publisher.duplicates(), inA, inB);
        }
        assertThat(kills.get()).isPositive();
        assertThat(sentCount()).isEqualTo(total);
        assertThat(publisher.orderViolations(expected)).as("order per aggregate").isEmpty();
        assertThat(publisher.firstDeliveries()).hasSize(total);
        assertThat(healthA.status()).as(healthA.toString()).isEqualTo(Health.Status.UP);
        assertThat(healthB.status()).as(healthB.toString()).isEqualTo(Health.Status.UP);
    }

    /**
     * Attack 7: the record stage's markSent fails (not a lost claim: a trigger refuses 2 % of the rows marked sent, so
     * the claim's transaction rolls back and every row of it is claimable again) at depth 3, two workers, a publisher
     * failing 5 % retriably. Everything must still be delivered and marked sent, in order, with health UP at the end.
     */
    @Test
    void markSentsThatFailOnTheRecordStageLoseNothingAndKeepOrder() throws Exception {
        Map<String, List<UUID>> expected = writeInterleaved(20, 30);
        int total = expected.values().stream().mapToInt(List::size).sum();
        db.execute("CREATE FUNCTION " + settings.schema() + ".flaky_sent() RETURNS trigger LANGUAGE plpgsql AS"
                + " $$ BEGIN IF random() < 0.02 THEN RAISE EXCEPTION 'sent refused at random'; END IF; RETURN NEW; END $$");
        db.execute("CREATE TRIGGER flaky_sent BEFORE UPDATE ON " + settings.qualifiedTable()
                + " FOR EACH ROW WHEN (NEW.status = 'sent') EXECUTE FUNCTION " + settings.schema() + ".flaky_sent()");
        LoggingPublisher publisher = new LoggingPublisher(0.05, new Random(41));
        Listener listener = new Listener();
        DeliveryEngine engine = engine(PostgresOutbox.store(relayDataSource, settings), publisher, listener, 2, 3, 10,
                Duration.ofSeconds(2));
        engine.start();
        Health health;
        try {
            awaitAllSent(total, Duration.ofSeconds(90));
            sleep(300);
            health = engine.health();
        } finally {
            boolean inTime = engine.stop(Duration.ofSeconds(10));
            System.out.printf("attack7: errors %s, publishes %d, failures %d, duplicates %d, stop %s%n",
                    listener.errorsByStep(), publisher.calls.get(), publisher.failures.get(), publisher.duplicates(),
                    inTime);
        }
        assertThat(listener.errors).containsKey("markSent");
        assertThat(publisher.orderViolations(expected)).as("order per aggregate").isEmpty();
        assertThat(publisher.firstDeliveries()).hasSize(total);
        assertThat(health.status()).as(health.toString()).isEqualTo(Health.Status.UP);
    }

    // ------------------------------------------------------------------------------------------------ set-up

    private DeliveryEngine engine(OutboxStore store, MessagePublisher publisher, DeliveryListener listener, int workers,
                                  int depth, int batchSize, Duration lease) {
        DeliverySettings deliverySettings = DeliverySettings.builder()
                .owner("relay-" + application)
                .batchSize(batchSize)
                .workers(workers)
                .pipelineDepth(depth)
                .wakeInterval(Duration.ofMillis(50))
                .leaseLength(lease)
                .ordering(Ordering.PER_AGGREGATE)
                .retryPolicy(RetryPolicy.exponential(Duration.ofMillis(5), 2.0, Duration.ofMillis(50), 0.2, 1000))
                .build();
        return DeliveryEngine.builder().store(store).publisher(publisher).settings(deliverySettings).listener(listener)
                .build();
    }

    /** Writes events of {@code aggregates} aggregates interleaved; answers each aggregate's event ids in write order. */
    private Map<String, List<UUID>> writeInterleaved(int aggregates, int perAggregate) throws SQLException {
        db.execute("INSERT INTO " + settings.qualifiedTable() + " (event_id, aggregate_type, aggregate_id, event_type,"
                + " payload, headers) SELECT gen_random_uuid(), 'order', 'agg-' || a, 'E' || e, '\\x7b7d', '{}'"
                + " FROM generate_series(1, " + perAggregate + ") e, generate_series(1, " + aggregates + ") a"
                + " ORDER BY e, a");
        Map<String, List<UUID>> byAggregate = new LinkedHashMap<>();
        try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT aggregate_id, event_id FROM " + settings.qualifiedTable()
                     + " ORDER BY seq")) {
            while (rs.next()) {
                byAggregate.computeIfAbsent(rs.getString(1), k -> new ArrayList<>()).add(rs.getObject(2, UUID.class));
            }
        }
        return byAggregate;
    }

    private int killIdleInTransaction() {
        try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM"
                     + " pg_stat_activity WHERE application_name = '" + application + "' AND state LIKE"
                     + " 'idle in transaction%' AND pid <> pg_backend_pid()")) {
            rs.next();
            return rs.getInt(1);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private int idleInTransaction() throws SQLException {
        try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_stat_activity WHERE application_name = '"
                     + application + "' AND state LIKE 'idle in transaction%'")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    private int sentCount() throws SQLException {
        try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM " + settings.qualifiedTable()
                     + " WHERE status = 'sent'")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    private void awaitAllSent(int total, Duration within) throws SQLException {
        awaitSentAtLeast(total, within);
    }

    private void awaitSentAtLeast(int rows, Duration within) throws SQLException {
        long until = System.nanoTime() + within.toNanos();
        int sent = 0;
        while (System.nanoTime() < until) {
            sent = sentCount();
            if (sent >= rows) {
                return;
            }
            sleep(100);
        }
        throw new AssertionError("only " + sent + " of " + rows + " rows sent after " + within.toSeconds() + " s;"
                + " statuses: " + statuses());
    }

    private String statuses() throws SQLException {
        try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT status, count(*), min(next_attempt_at - now())::text,"
                     + " max(attempts) FROM " + settings.qualifiedTable() + " GROUP BY status")) {
            StringBuilder out = new StringBuilder();
            while (rs.next()) {
                out.append(rs.getString(1)).append('=').append(rs.getInt(2)).append(" (due in ")
                        .append(rs.getString(3)).append(", max attempts ").append(rs.getInt(4)).append(") ");
            }
            return out.toString();
        }
    }

    private static boolean chance(Random random, double p) {
        synchronized (random) {
            return random.nextDouble() < p;
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    // ------------------------------------------------------------------------------------------------ publisher

    /** One message as the broker saw it: acked (delivered) or failed. */
    private record Sent(UUID eventId, String aggregateId, boolean acked, String thread) {
    }

    /**
     * A broker that logs every message it was given, in order, and fails each with a probability (retriably); after a
     * failure, later messages of the same aggregate in the call are not attempted (the publisher contract).
     */
    private final class LoggingPublisher implements MessagePublisher {
        final List<Sent> log = new ArrayList<>();
        final double failProbability;
        final Random random;
        final AtomicInteger calls = new AtomicInteger();
        final AtomicInteger failures = new AtomicInteger();
        final List<String> stalePublishes = new CopyOnWriteArrayList<>();
        volatile boolean checkRowsAtPublish;
        volatile boolean checkLeaseAtPublish;
        volatile Duration delay = Duration.ZERO;

        LoggingPublisher(double failProbability, Random random) {
            this.failProbability = failProbability;
            this.random = random;
        }

        @Override
        public List<PublishOutcome> publish(List<ClaimedDelivery> batch) {
            calls.incrementAndGet();
            if (checkRowsAtPublish) {
                checkHeld(batch);
            }
            if (checkLeaseAtPublish) {
                checkLeased(batch);
            }
            if (!delay.isZero()) {
                sleep(delay.toMillis());
            }
            Set<String> failed = new HashSet<>();
            List<PublishOutcome> outcomes = new ArrayList<>();
            for (ClaimedDelivery d : batch) {
                String aggregate = d.aggregate().id();
                if (failed.contains(aggregate)) {
                    outcomes.add(PublishOutcome.notAttempted(d.eventId(), "earlier failed"));
                    continue;
                }
                boolean fail = chance(random, failProbability);
                synchronized (log) {
                    log.add(new Sent(d.eventId(), aggregate, !fail, Thread.currentThread().getName()));
                }
                if (fail) {
                    failures.incrementAndGet();
                    failed.add(aggregate);
                    outcomes.add(PublishOutcome.retriable(d.eventId(), "random failure"));
                } else {
                    outcomes.add(PublishOutcome.acked(d.eventId()));
                }
            }
            return outcomes;
        }

        /** Every row of the batch must be pending and leased by the batch's token, the lease not expired. */
        private void checkLeased(List<ClaimedDelivery> batch) {
            List<UUID> ids = batch.stream().map(ClaimedDelivery::eventId).toList();
            UUID token = batch.get(0).lease().value();
            try (Connection c = db.dataSource.getConnection();
                 PreparedStatement ps = c.prepareStatement("SELECT count(*) FILTER (WHERE status <> 'pending'),"
                         + " count(*) FILTER (WHERE lease_token IS DISTINCT FROM ?),"
                         + " count(*) FILTER (WHERE lease_until <= clock_timestamp()) FROM "
                         + settings.qualifiedTable() + " WHERE event_id = ANY(?)")) {
                ps.setObject(1, token);
                ps.setArray(2, c.createArrayOf("uuid", ids.toArray()));
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    if (rs.getInt(1) + rs.getInt(2) + rs.getInt(3) > 0) {
                        stalePublishes.add(Thread.currentThread().getName() + ": " + ids.size() + " rows, "
                                + rs.getInt(1) + " not pending, " + rs.getInt(2) + " another token, " + rs.getInt(3)
                                + " lease expired");
                    }
                }
            } catch (SQLException e) {
                stalePublishes.add("check failed: " + e);
            }
        }

        /** Every row of the batch must be pending and locked by a transaction (its claim) right now. */
        private void checkHeld(List<ClaimedDelivery> batch) {
            List<UUID> ids = batch.stream().map(ClaimedDelivery::eventId).toList();
            try (Connection c = db.dataSource.getConnection()) {
                c.setAutoCommit(false);
                int sent;
                int free;
                try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + settings.qualifiedTable()
                        + " WHERE event_id = ANY(?) AND status <> 'pending'")) {
                    ps.setArray(1, c.createArrayOf("uuid", ids.toArray()));
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        sent = rs.getInt(1);
                    }
                }
                try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM (SELECT 1 FROM "
                        + settings.qualifiedTable() + " WHERE event_id = ANY(?) FOR UPDATE SKIP LOCKED) x")) {
                    ps.setArray(1, c.createArrayOf("uuid", ids.toArray()));
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        free = rs.getInt(1);
                    }
                }
                c.rollback();
                if (sent > 0 || free > 0) {
                    stalePublishes.add(Thread.currentThread().getName() + ": " + ids.size() + " rows, " + sent
                            + " not pending, " + free + " locked by nobody, lease " + batch.get(0).lease());
                }
            } catch (SQLException e) {
                stalePublishes.add("check failed: " + e);
            }
        }

        @Override
        public void close() {
        }

        List<UUID> firstDeliveries() {
            Set<UUID> seen = new HashSet<>();
            List<UUID> firsts = new ArrayList<>();
            synchronized (log) {
                for (Sent s : log) {
                    if (s.acked() && seen.add(s.eventId())) {
                        firsts.add(s.eventId());
                    }
                }
            }
            return firsts;
        }

        long duplicates() {
            Map<UUID, Integer> counts = new HashMap<>();
            synchronized (log) {
                for (Sent s : log) {
                    if (s.acked()) {
                        counts.merge(s.eventId(), 1, Integer::sum);
                    }
                }
            }
            return counts.values().stream().filter(n -> n > 1).count();
        }

        /**
         * The two order rules: the first delivery of each event comes after the first delivery of every earlier event
         * of its aggregate; after a failure of event k, no later event of its aggregate is delivered before k is
         * delivered again.
         */
        List<String> orderViolations(Map<String, List<UUID>> expected) {
            Map<UUID, Integer> position = new HashMap<>();
            expected.values().forEach(ids -> {
                for (int i = 0; i < ids.size(); i++) {
                    position.put(ids.get(i), i);
                }
            });
            Map<String, Set<UUID>> delivered = new HashMap<>();
            Map<String, Set<Integer>> failedOpen = new HashMap<>();
            List<String> violations = new ArrayList<>();
            List<Sent> copy;
            synchronized (log) {
                copy = List.copyOf(log);
            }
            for (int n = 0; n < copy.size(); n++) {
                Sent s = copy.get(n);
                int at = position.get(s.eventId());
                Set<UUID> done = delivered.computeIfAbsent(s.aggregateId(), k -> new HashSet<>());
                Set<Integer> open = failedOpen.computeIfAbsent(s.aggregateId(), k -> new HashSet<>());
                if (!s.acked()) {
                    open.add(at);
                    continue;
                }
                if (!done.contains(s.eventId())) {
                    List<UUID> ids = expected.get(s.aggregateId());
                    for (int i = 0; i < at; i++) {
                        if (!done.contains(ids.get(i))) {
                            violations.add("log#" + n + " " + s.aggregateId() + " event #" + at + " first delivered"
                                    + " before event #" + i + " (" + s.thread() + ")");
                            break;
                        }
                    }
                }
                for (int k : open) {
                    if (k < at) {
                        violations.add("log#" + n + " " + s.aggregateId() + " event #" + at + " delivered after a"
                                + " failure of event #" + k + " and before its redelivery (" + s.thread() + ")");
                    }
                }
                open.remove(at);
                done.add(s.eventId());
            }
            return violations.size() > 20 ? violations.subList(0, 20) : violations;
        }
    }

    // ------------------------------------------------------------------------------------------------ listener

    private static final class Listener implements DeliveryListener {
        final AtomicInteger leaseLost = new AtomicInteger();
        final Map<String, AtomicInteger> errors = new ConcurrentHashMap<>();
        final List<String> samples = new CopyOnWriteArrayList<>();

        @Override
        public void onLeaseLost(LeaseToken lease, int expected, int updated) {
            leaseLost.incrementAndGet();
        }

        @Override
        public void onError(String step, Throwable error) {
            errors.computeIfAbsent(step, k -> new AtomicInteger()).incrementAndGet();
            if (samples.size() < 10) {
                String text = String.valueOf(error);
                samples.add(step + ": " + (text.length() > 160 ? text.substring(0, 160) + "..." : text));
            }
        }

        String errorsByStep() {
            return errors + " " + samples;
        }
    }

    // ------------------------------------------------------------------------------------------------ store

    /** The real store, with a hook before markSent (run on the calling thread). */
    private static final class ForwardingStore implements OutboxStore {
        private final OutboxStore delegate;
        volatile BiConsumer<LeaseToken, Collection<UUID>> beforeMarkSent;

        ForwardingStore(OutboxStore delegate) {
            this.delegate = delegate;
        }

        @Override
        public ClaimBatch claim(ClaimRequest request) {
            return delegate.claim(request);
        }

        @Override
        public int markSent(LeaseToken lease, Collection<UUID> eventIds) {
            BiConsumer<LeaseToken, Collection<UUID>> hook = beforeMarkSent;
            if (hook != null) {
                hook.accept(lease, eventIds);
            }
            return delegate.markSent(lease, eventIds);
        }

        @Override
        public int reschedule(LeaseToken lease, List<Reschedule> retries) {
            return delegate.reschedule(lease, retries);
        }

        @Override
        public int park(LeaseToken lease, List<Park> parkings) {
            return delegate.park(lease, parkings);
        }

        @Override
        public int release(LeaseToken lease, Collection<UUID> eventIds) {
            return delegate.release(lease, eventIds);
        }

        @Override
        public int renew(LeaseToken lease, Duration leaseLength) {
            return delegate.renew(lease, leaseLength);
        }

        @Override
        public Optional<Duration> timeUntilNextDue() {
            return delegate.timeUntilNextDue();
        }

        @Override
        public int purgeSent(Duration retention, int maxRows) {
            return delegate.purgeSent(retention, maxRows);
        }

        @Override
        public BacklogStats stats() {
            return delegate.stats();
        }

        @Override
        public List<ParkedEvent> parked(ReplaySelector selector, int limit) {
            return delegate.parked(selector, limit);
        }

        @Override
        public int replay(ReplaySelector selector) {
            return delegate.replay(selector);
        }
    }
}
