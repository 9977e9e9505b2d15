package io.queuebox.domain;

import static io.queuebox.domain.Fixtures.anEventFor;
import static io.queuebox.domain.Fixtures.order;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.BacklogStats;
import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.Health;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.Park;
import io.queuebox.ports.ParkedEvent;
import io.queuebox.ports.ReplaySelector;
import io.queuebox.ports.Reschedule;
import io.queuebox.ports.WakeReason;
import io.queuebox.ports.WakeSource;
import java.time.Clock;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Second adversarial review of the named wake-ups, after the fix b483f13 (hold limit, heldDeadline, marks).
 */
class DeliveryEngineWakeReview2Test {

    private static final Duration SOON = EngineHarness.SOON;

    private final FakeOutboxStore fake = new FakeOutboxStore(Clock.systemUTC());
    private final SlowStore store = new SlowStore(fake);
    private final FakePublisher publisher = new FakePublisher();
    private final RecordingListener listener = new RecordingListener();
    private final EngineHarness engines = new EngineHarness();
    private final RecordingSource source = new RecordingSource();

    @AfterEach
    void stopEngines() {
        store.release.countDown();
        engines.stopAll(publisher);
    }

    private static void pause(long millis) {
        await().pollDelay(Duration.ofMillis(millis)).atMost(Duration.ofMillis(millis + 5_000)).until(() -> true);
    }

    private static void assertEntered(CountDownLatch entered) throws InterruptedException {
        if (!entered.await(SOON.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("worker 1 did not claim within " + SOON);
        }
    }

    /** Worker 1's next claim (an interval poll) chooses its rows, then answers only after {@code millis}. */
    private void slowNextClaimOfWorker1(long millis) throws InterruptedException {
        store.hangMillis = millis;
        store.hangOn.set("queuebox-worker-1");
        assertEntered(store.entered);
    }

    // ------------------------------------------------------------------------------------------------ A

    /**
     * Promise 4 (the rule "one wake-up, one worker"; efficiency, not a lost row). Worker 1's interval poll is
     * slow to answer (300 ms: a loaded database). A row is committed and named while that claim is young, so
     * it is held. At HOLD_LIMIT every idle peer's planner sees the same {@code heldDeadline} and EVERY idle
     * peer claims at once: one named row costs workers-1 claims, where the plain wake-up (control below) is a
     * ticket one worker takes. With 8 workers a single row costs 7 claims, 6 of them empty.
     */
    @Test
    void aHeldNamedRowMakesEveryIdlePeerClaimAtTheHoldDeadline() throws Exception {
        int claims = heldRowWithIdlePeers(true);
        assertThat(claims).as("claims by the idle peers for one named row (a plain wake-up costs 1)")
                .isLessThanOrEqualTo(2);
    }

    /** Control (passes): the same interleaving with a plain wake-up costs one claim. */
    @Test
    void controlAPlainWakeUpWhileWorker1sClaimIsSlowCostsOneClaim() throws Exception {
        int claims = heldRowWithIdlePeers(false);
        assertThat(claims).isLessThanOrEqualTo(2);
    }

    private int heldRowWithIdlePeers(boolean named) throws Exception {
        engines.start(DeliveryEngine.builder().wakeSource(source), store, publisher, listener,
                EngineHarness.oneWorker(1, Duration.ofMillis(500)).workers(4));
        await().atMost(SOON).until(() -> fake.claimCalls.get() >= 1);
        pause(200);
        slowNextClaimOfWorker1(400);
        int before = fake.claimCalls.get();
        List<String> threadsBefore = List.copyOf(store.claimThreads);

        OutboxEvent row = anEventFor(order(UUID.randomUUID().toString()));
        fake.add(row);
        if (named) {
            source.listener.get().wakeFor(WakeReason.CAPTURE, row.eventId());
        } else {
            source.listener.get().wake(WakeReason.CAPTURE);
        }
        await().atMost(SOON).until(() -> fake.count(RowStatus.SENT) == 1);
        pause(150); // worker 1's claim still hangs: only the peers claim meanwhile
        int claims = fake.claimCalls.get() - before;
        System.out.println("claims by peers: " + claims + " " + store.claimThreads.subList(threadsBefore.size(),
                store.claimThreads.size()));
        return claims;
    }

    // ------------------------------------------------------------------------------------------------ B

    /**
     * Promises 4 and 2 (a stall; PRE-EXISTING since abe75ab, not made by the named wake-ups: the plain
     * wake-up fails the same way, see the parameter). Worker 1's interval poll chooses the committed row (it is
     * leased now) and its answer never comes back in time (socket timeout 0 on a vanished server; 8 s here).
     * The row's wake-up is held for 20 ms, then the idle peer claims, finds the row leased, and the settled
     * wake-up wakes it once more: empty again. The lease (300 ms) lapses and the row is due, but the only worker
     * that polls on the interval is the hung one, and the peer, with nothing in flight, plans a one-day wait:
     * the row waits for the hung claim, far beyond the 500 ms wake interval. The fix b483f13 says "one worker's
     * hung claim never keeps a row from the others"; it does when that claim took the row.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "named {0}")
    @org.junit.jupiter.params.provider.ValueSource(booleans = {true, false})
    void aRowTakenByAHungClaimOfWorker1WaitsForItLongAfterItsLeaseLapsed(boolean named) throws Exception {
        engines.start(DeliveryEngine.builder().wakeSource(source), store, publisher, listener,
                EngineHarness.oneWorker(1, Duration.ofMillis(500)).workers(2)
                        .leaseLength(Duration.ofMillis(300)));
        await().atMost(SOON).until(() -> fake.claimCalls.get() >= 1);
        pause(100);
        OutboxEvent row = anEventFor(order(UUID.randomUUID().toString()));
        fake.add(row);
        // Worker 1's interval poll takes the row, then its answer hangs; the log reports the row a moment later.
        slowNextClaimOfWorker1(8_000);
        if (named) {
            source.listener.get().wakeFor(WakeReason.CAPTURE, row.eventId());
        } else {
            source.listener.get().wake(WakeReason.CAPTURE);
        }
        await().alias("the row, due again once the hung claim's 300 ms lease lapsed, delivered within the 500 ms"
                + " wake interval after that (+ slack)").atMost(Duration.ofMillis(2_500))
                .until(() -> fake.count(RowStatus.SENT) == 1);
    }

    // ------------------------------------------------------------------------------------------------ plumbing

    /** A wake source that hands its listener to the test. */
    private static final class RecordingSource implements WakeSource {
        final AtomicReference<WakeListener> listener = new AtomicReference<>();

        @Override
        public void start(WakeListener delivery) {
            listener.set(delivery);
        }

        @Override
        public Health health() {
            return Health.up("recording");
        }

        @Override
        public void close() {
        }
    }

    /**
     * The fake store, whose claim on the thread named in {@code hangOn} (once) answers only after
     * {@code hangMillis} (or when {@code release} opens), after it chose its rows; every other call goes
     * straight through. Records the thread of every claim.
     */
    private static final class SlowStore implements OutboxStore {
        final FakeOutboxStore delegate;
        final AtomicReference<String> hangOn = new AtomicReference<>();
        final CountDownLatch entered = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final List<String> claimThreads = new CopyOnWriteArrayList<>();
        volatile long hangMillis = 8_000;

        SlowStore(FakeOutboxStore delegate) {
            this.delegate = delegate;
        }

        @Override
        public ClaimBatch claim(ClaimRequest request) {
            claimThreads.add(Thread.currentThread().getName());
            ClaimBatch batch = delegate.claim(request);
            String name = hangOn.get();
            if (Thread.currentThread().getName().equals(name) && hangOn.compareAndSet(name, null)) {
                entered.countDown();
                try {
                    release.await(hangMillis, TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return batch;
        }

        @Override
        public int markSent(LeaseToken lease, Collection<UUID> eventIds) {
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
