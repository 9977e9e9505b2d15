package io.queuebox.domain;

import static io.queuebox.domain.Fixtures.anEventFor;
import static io.queuebox.domain.Fixtures.order;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.AggregateRef;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.ports.WakeReason;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The pipelined loop: a worker claims the next batch while its publish stage publishes and records the last. */
class DeliveryEnginePipelineTest {

    private static final Duration SOON = EngineHarness.SOON;
    private static final Duration LONG_INTERVAL = EngineHarness.LONG_INTERVAL;
    private static final RetryPolicy QUICK_RETRIES = EngineHarness.QUICK_RETRIES;

    private final FakeOutboxStore store = new FakeOutboxStore(Clock.systemUTC());
    private final FakePublisher publisher = new FakePublisher();
    private final RecordingListener listener = new RecordingListener();
    private final EngineHarness engines = new EngineHarness();

    @AfterEach
    void stopEngines() {
        engines.stopAll(publisher);
    }

    private static DeliverySettings.Builder settings(int depth) {
        return EngineHarness.oneWorker(depth, LONG_INTERVAL);
    }

    private DeliveryEngine started(DeliverySettings.Builder settings) {
        return engines.start(DeliveryEngine.builder(), store, publisher, listener, settings);
    }

    private List<OutboxEvent> eventsOf(AggregateRef aggregate, int count) {
        List<OutboxEvent> events = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            events.add(anEventFor(aggregate));
        }
        store.add(events.toArray(OutboxEvent[]::new));
        return events;
    }

    private void awaitAllSent(int count) {
        await().atMost(SOON).until(() -> store.count(RowStatus.SENT) == count);
    }

    /** The publisher answers the first {@code outages} attempts not attempted, then acks; the times of all. */
    private List<Long> attemptsAfterOutages(int outages) {
        List<Long> attempts = new CopyOnWriteArrayList<>();
        AtomicInteger calls = new AtomicInteger();
        publisher.answer = d -> {
            attempts.add(System.nanoTime());
            return calls.incrementAndGet() <= outages ? PublishOutcome.notAttempted(d.eventId(), "broker down")
                    : PublishOutcome.acked(d.eventId());
        };
        return attempts;
    }

    private static void sleep(long millis) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(millis));
    }

    // (a)
    @Test
    void atDepthTwoTheNextClaimRunsWhileTheFirstPublishIsStillBlocked() {
        eventsOf(order("a"), 1);
        eventsOf(order("b"), 1);
        publisher.gate = new CountDownLatch(1);

        started(settings(2).batchSize(1));

        await().atMost(SOON).until(() -> store.claimCalls.get() >= 2);
        assertThat(publisher.completed.get()).as("the first publish is still blocked").isZero();
        assertThat(store.claimSizes).startsWith(1, 1);
        publisher.gate.countDown();
        awaitAllSent(2);
    }

    @Test
    void atDepthOneNoClaimRunsWhileAPublishIsBlocked() {
        eventsOf(order("a"), 1);
        eventsOf(order("b"), 1);
        publisher.gate = new CountDownLatch(1);

        started(settings(1).batchSize(1));

        await().atMost(SOON).until(() -> publisher.calls.get() == 1);
        sleep(200);
        assertThat(store.claimCalls.get()).as("the serial loop waits for the publish").isEqualTo(1);
        publisher.gate.countDown();
        awaitAllSent(2);
        assertThat(publisher.threads).containsOnly("queuebox-worker-1");
    }

    // (b)
    @ParameterizedTest(name = "depth {0}")
    @ValueSource(ints = {1, 2, 3})
    void atMostDepthBatchesOfAWorkerAreClaimedAndNotYetRecorded(int depth) {
        for (int i = 0; i < 30; i++) {
            eventsOf(order("agg-" + i), 1);
        }
        publisher.busyNanos = TimeUnit.MILLISECONDS.toNanos(15);

        started(settings(depth).batchSize(2));

        awaitAllSent(30);
        assertThat(store.maxLiveLeases.get()).as("batches leased at once by one worker").isEqualTo(depth);
    }

    @Test
    void aFullBatchOfOneBusyAggregateIsClaimedAgainOnceItsOutcomeIsWrittenNotOnTheInterval() {
        // At depth 1 the claims are 5, 5, 2. At depth 2 the claim overlapping a batch finds the aggregate held
        // back by it (0 rows); the stage's full batch then asks its worker to claim again.
        eventsOf(order("a"), 12);

        started(settings(2).batchSize(5));

        awaitAllSent(12);
        assertThat(store.claimSizes.stream().filter(size -> size > 0).toList()).containsExactly(5, 5, 2);
        assertThat(listener.wakes).containsOnly(WakeReason.FULL_BATCH);
        assertThat(store.sentOrder).containsExactlyElementsOf(
                store.sentOrder.stream().sorted((x, y) -> Long.compare(store.row(x).sequence, store.row(y).sequence))
                        .toList());
    }

    // (c)
    @ParameterizedTest(name = "seed {0}")
    @ValueSource(longs = {1L, 2L, 3L})
    void aRandomisedRunDeliversEveryEventAndEachAggregateInOrder(long seed) {
        Random random = new Random(seed);
        int aggregates = 40;
        int perAggregate = 8;
        for (int a = 0; a < aggregates; a++) {
            eventsOf(order("r" + a), perAggregate);
        }
        List<ClaimedDelivery> acked = new CopyOnWriteArrayList<>();
        publisher.answer = d -> {
            int roll;
            synchronized (random) {
                roll = random.nextInt(100);
            }
            LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(roll * 20L)); // 0 to 2 ms per message
            if (roll < 12) {
                return PublishOutcome.retriable(d.eventId(), "flaky");
            }
            acked.add(d);
            return PublishOutcome.acked(d.eventId());
        };

        started(settings(2).workers(4).batchSize(5).wakeInterval(Duration.ofMillis(50))
                .retryPolicy(QUICK_RETRIES.toBuilder().maxAttempts(1000).build()));

        await().atMost(Duration.ofSeconds(20)).until(() -> store.count(RowStatus.SENT) == aggregates * perAggregate);
        assertThat(publisher.concurrentDuplicates).isEmpty();
        assertThat(publisher.threads).allMatch(name -> name.matches("queuebox-worker-\\d-publish"));
        Map<String, List<Long>> seenPerAggregate = new HashMap<>();
        for (ClaimedDelivery d : acked) {
            seenPerAggregate.computeIfAbsent(d.aggregate().id(), k -> new ArrayList<>()).add(d.sequence());
        }
        assertThat(seenPerAggregate).hasSize(aggregates);
        seenPerAggregate.forEach((aggregate, sequences) ->
                assertThat(sequences).as("acked sequences of " + aggregate).isSorted().hasSizeGreaterThanOrEqualTo(
                        perAggregate));
    }

    // (d)
    @Test
    void shutdownLetsTheBatchPublishingAndTheBatchQueuedBothRecordWithinTheDeadline() {
        UUID a = eventsOf(order("a"), 1).get(0).eventId();
        UUID b = eventsOf(order("b"), 1).get(0).eventId();
        publisher.gate = new CountDownLatch(1);
        DeliveryEngine engine = started(settings(2).batchSize(1));
        await().atMost(SOON).until(() -> publisher.calls.get() == 1 && store.row(b).lease != null);

        AtomicReference<Boolean> result = new AtomicReference<>();
        Thread stopper = new Thread(() -> result.set(engine.stop(Duration.ofSeconds(2))));
        stopper.start();
        await().atMost(SOON).until(() -> !engine.isRunning());
        sleep(100);
        assertThat(store.releaseCalls.get()).as("nothing released while a publish runs").isZero();
        publisher.gate.countDown();

        await().atMost(SOON).until(() -> result.get() != null);
        assertThat(result.get()).isTrue();
        assertThat(store.row(a).status).isEqualTo(RowStatus.SENT);
        assertThat(store.row(b).status).isEqualTo(RowStatus.SENT);
        assertThat(store.releaseCalls.get()).isZero();
        assertThat(publisher.calls.get()).isEqualTo(2);
    }

    @Test
    void afterTheDeadlineTheQueuedBatchIsReleasedAndTheOnePublishingKeepsItsLease() {
        UUID a = eventsOf(order("a"), 1).get(0).eventId();
        UUID b = eventsOf(order("b"), 1).get(0).eventId();
        publisher.gate = new CountDownLatch(1);
        DeliveryEngine engine = started(settings(2).batchSize(1));
        await().atMost(SOON).until(() -> publisher.calls.get() == 1 && store.row(b).lease != null);

        assertThat(engine.stop(Duration.ofMillis(100))).isFalse();

        // Released at once, off the caller's thread (stop returns by its deadline whatever the store does).
        await().atMost(SOON).untilAsserted(() -> assertThat(store.row(b).lease).as("never published: back at once").isNull());
        assertThat(store.row(b).status).isEqualTo(RowStatus.PENDING);
        assertThat(store.row(a).lease).as("still publishing: keeps its lease").isNotNull();
        publisher.gate.countDown();
        await().atMost(SOON).until(() -> store.row(a).status == RowStatus.SENT);
        sleep(100);
        assertThat(publisher.calls.get()).as("the released batch was not published").isEqualTo(1);
    }

    @Test
    void aClaimThatReturnsAfterShutdownBeganIsReleasedAtOnceAndNeverPublished() {
        UUID id = eventsOf(order("a"), 1).get(0).eventId();
        store.claimGate = new CountDownLatch(1);
        DeliveryEngine engine = started(settings(2));
        await().atMost(SOON).until(() -> store.claimCalls.get() == 1);

        AtomicReference<Boolean> result = new AtomicReference<>();
        Thread stopper = new Thread(() -> result.set(engine.stop(Duration.ofSeconds(2))));
        stopper.start();
        await().atMost(SOON).until(() -> !engine.isRunning());
        store.claimGate.countDown();

        await().atMost(SOON).until(() -> result.get() != null);
        assertThat(result.get()).isTrue();
        assertThat(store.releaseCalls.get()).isEqualTo(1);
        assertThat(store.row(id).lease).isNull();
        assertThat(store.row(id).status).isEqualTo(RowStatus.PENDING);
        assertThat(publisher.calls.get()).isZero();
    }

    // (e)
    @Test
    void aStageWhoseRecordThrowsAnErrorKeepsRunningAndHealthIsDownUntilItRecovers() {
        eventsOf(order("a"), 1);
        store.markSentError = new NoClassDefFoundError("org/postgresql/PGStatement");

        DeliveryEngine engine = started(settings(2).leaseLength(Duration.ofMillis(300)));

        await().atMost(SOON).until(() -> !engine.health().isUp());
        // A clean publish is marked sent on the worker's record stage.
        assertThat(engine.health().detail()).contains("queuebox-worker-1-record").contains("NoClassDefFoundError");
        // Health goes down before the listener hears of the error.
        await().atMost(SOON).untilAsserted(() -> assertThat(listener.errors)
                .contains("record-stage: org/postgresql/PGStatement"));

        store.markSentError = null;
        eventsOf(order("b"), 1);
        engine.wake(WakeReason.EXTERNAL);

        awaitAllSent(2); // b by the same stage; a once the lease its failed record left lapsed
        await().atMost(SOON).until(() -> engine.health().isUp());
        assertThat(publisher.threads).containsOnly("queuebox-worker-1-publish");
    }

    // (f)
    @Test
    void newsDuringAFlightMakesTheStageAskItsWorkerToClaimAgainAfterTheOutcome() {
        AggregateRef x = order("x");
        eventsOf(x, 1);
        publisher.gate = new CountDownLatch(1);
        DeliveryEngine engine = started(settings(2).workers(2));
        await().atMost(SOON).until(() -> publisher.calls.get() == 1 && store.claimCalls.get() == 2);
        eventsOf(x, 1);

        engine.wake(WakeReason.EXTERNAL);
        // The idle worker takes the wake-up and finds x held back; the busy one does not take it.
        await().atMost(SOON).until(() -> store.claimCalls.get() == 3);
        sleep(100);
        assertThat(store.claimCalls.get()).isEqualTo(3);
        publisher.gate.countDown();

        await().alias("the second row of x delivered after its wake-up, not on the 30 s interval").atMost(SOON)
                .until(() -> store.count(RowStatus.SENT) == 2);
        assertThat(listener.wakes).containsOnly(WakeReason.EXTERNAL);
    }

    @Test
    void wakeUpsWhileAWorkersBatchIsOutCoalesceIntoOneClaimAfterIt() {
        eventsOf(order("a"), 1);
        publisher.gate = new CountDownLatch(1);
        DeliveryEngine engine = started(settings(2));
        await().atMost(SOON).until(() -> publisher.calls.get() == 1);

        for (int i = 0; i < 100; i++) {
            engine.wake(WakeReason.CAPTURE);
        }
        sleep(100);
        assertThat(store.claimCalls.get()).as("a worker with a batch out takes no wake-up").isEqualTo(1);
        publisher.gate.countDown();

        awaitAllSent(1);
        await().atMost(SOON).until(() -> store.claimCalls.get() >= 2);
        sleep(100);
        assertThat(store.claimCalls.get()).isEqualTo(2);
    }

    // (g)
    @Test
    void theWorkerPausesBeforeItsNextClaimWhenItsStageSawAnOutage() {
        UUID id = eventsOf(order("a"), 1).get(0).eventId();
        List<Long> attempts = attemptsAfterOutages(2);

        // A 30 s interval makes the error pause 1 s; batches of one make every batch full (claim again at once).
        started(settings(2).batchSize(1));

        await().atMost(Duration.ofSeconds(5)).until(() -> store.row(id).status == RowStatus.SENT);
        assertThat(attempts).hasSize(3);
        for (int i = 1; i < attempts.size(); i++) {
            assertThat(Duration.ofNanos(attempts.get(i) - attempts.get(i - 1)))
                    .as("between attempt %d and %d", i, i + 1).isGreaterThan(Duration.ofMillis(900));
        }
    }

    /**
     * CI of 2026-12-05: the worker's next claim was under way when the batch before it failed; it took the row the
     * failure had just released, and the stage published it 3 ms after the failed attempt instead of after the pause.
     */
    @Test
    void aBatchClaimedWhileTheFailedOneWasOutWaitsForThePauseToo() {
        UUID id = eventsOf(order("a"), 1).get(0).eventId();
        List<Long> attempts = attemptsAfterOutages(1);
        // The second claim (the one after the full first batch) starts at once and looks at the rows only once
        // the failed row is released; it answers a little later still, after the stage has recorded the failure.
        CountDownLatch released = new CountDownLatch(1);
        AtomicInteger claims = new AtomicInteger();
        store.beforeClaim = () -> {
            if (claims.incrementAndGet() == 2) {
                try {
                    released.await(5, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                sleep(100);
            }
        };
        store.afterRelease = released::countDown;

        started(settings(2).batchSize(1));

        await().atMost(Duration.ofSeconds(5)).until(() -> store.row(id).status == RowStatus.SENT);
        assertThat(attempts).hasSize(2);
        assertThat(Duration.ofNanos(attempts.get(1) - attempts.get(0))).isGreaterThan(Duration.ofMillis(900));
    }
}
