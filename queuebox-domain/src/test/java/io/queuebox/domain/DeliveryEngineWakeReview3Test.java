package io.queuebox.domain;

import static io.queuebox.domain.Fixtures.anEventFor;
import static io.queuebox.domain.Fixtures.order;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.WakeReason;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Third adversarial review of the named wake-ups, after de19c0e (held rows expire through the renewer,
 * planPeerWake counts a hung claim as a batch in flight).
 */
class DeliveryEngineWakeReview3Test {

    private static final Duration SOON = EngineHarness.SOON;

    private final FakeOutboxStore fake = new FakeOutboxStore(Clock.systemUTC());
    private final SlowStore store = new SlowStore(fake);
    private final FakePublisher publisher = new FakePublisher();
    private final RecordingListener listener = new RecordingListener();
    private final EngineHarness engines = new EngineHarness();
    private final HandingWakeSource source = new HandingWakeSource();

    @AfterEach
    void stopEngines() {
        store.release.countDown();
        store.renewRelease.countDown();
        engines.stopAll(publisher);
    }

    private static void pause(long millis) {
        await().pollDelay(Duration.ofMillis(millis)).atMost(Duration.ofMillis(millis + 5_000)).until(() -> true);
    }

    private static void assertEntered(CountDownLatch entered, String what) throws InterruptedException {
        if (!entered.await(SOON.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError(what + " did not happen within " + SOON);
        }
    }

    // ------------------------------------------------------------------------------------------------ A

    /**
     * Promise 4 (bounded latency). de19c0e moved the expiry of held named rows from the idle workers' own
     * timers (heldDeadline) to the lease renewer alone, and the renewer is also the only one that tells idle
     * peers that a claim hangs (signal.scheduleChanged in watchClaims). But the renewer runs store.renew
     * synchronously first: when one renew hangs (a lock wait, a stalled connection: the same database stall
     * that makes a claim hang), watchClaims never runs again. Then: worker 1's interval poll hangs (it chose
     * its rows before row B committed); B is committed and named, so it is held; the hold limit (20 ms)
     * passes, but nothing expires it; the idle peers planned PEER_IDLE_WAIT (nothing in flight, and the
     * renewer that would make them replan at claimHangs is stuck). B waits for worker 1's hung claim (4 s)
     * with a 300 ms wake interval and two idle peers. Control: the same with renew answering at once.
     */
    @ParameterizedTest(name = "renew hangs {0}")
    @ValueSource(booleans = {true, false})
    void aHeldRowWaitsForTheHungClaimWhileTheRenewerIsBlockedInRenew(boolean renewHangs) throws Exception {
        engines.start(DeliveryEngine.builder().wakeSource(source), store, publisher, listener,
                EngineHarness.oneWorker(1, Duration.ofMillis(300)).workers(3).leaseLength(Duration.ofMillis(600)));
        await().atMost(SOON).until(() -> fake.claimCalls.get() >= 1);
        pause(100);

        // Row A goes in flight (its publish is slow): the renewer renews its lease, and that renew hangs.
        store.renewHangs = renewHangs;
        publisher.gate = new CountDownLatch(1);
        OutboxEvent a = anEventFor(order(UUID.randomUUID().toString()));
        fake.add(a);
        source.listener.get().wake(WakeReason.CAPTURE);
        if (renewHangs) {
            assertEntered(store.renewEntered, "a renew");
        } else {
            await().atMost(SOON).until(() -> fake.renewCalls.get() >= 1);
        }
        publisher.gate.countDown();
        await().atMost(SOON).until(() -> fake.count(RowStatus.SENT) == 1);
        pause(400); // everyone idle again

        // Worker 1's next interval poll chooses its rows, then answers only after 4 s.
        store.hangMillis = 4_000;
        store.hangOn.set("queuebox-worker-1");
        assertEntered(store.entered, "worker 1's claim");
        OutboxEvent b = anEventFor(order(UUID.randomUUID().toString()));
        fake.add(b);
        long named = System.nanoTime();
        source.listener.get().wakeFor(WakeReason.CAPTURE, b.eventId());
        await().atMost(Duration.ofSeconds(6)).until(() -> fake.count(RowStatus.SENT) == 2);
        long waitedMillis = (System.nanoTime() - named) / 1_000_000;
        System.out.println("renewHangs=" + renewHangs + ": named row sent after " + waitedMillis + " ms; claims "
                + store.claimThreads);
        assertThat(waitedMillis).as("ms from the named wake-up to the row's delivery (wake interval 300 ms)")
                .isLessThan(1_000);
    }

    // ------------------------------------------------------------------------------------------------ B

    /**
     * Promise 4 (an idle engine costs one claim per wake interval whatever the number of workers). The outbox
     * is empty; each claim takes 300 ms (a loaded database; held-claim mode's statement), the wake interval is
     * 200 ms. Worker 1's poll "hangs" by de19c0e's measure after 200 ms: the renewer tells the peers, every
     * idle peer claims at once (planPeerWake: claimHangs, and their interval ran out long ago), their claims
     * are as slow, and the cycle repeats on worker 1's next poll. Claims grow with the number of workers, on
     * a database that is already slow, while nothing changes. Control: one worker.
     */
    @ParameterizedTest(name = "workers {0}")
    @ValueSource(ints = {1, 8})
    void slowEmptyClaimsMakeEveryIdlePeerPoll(int workers) throws Exception {
        store.everyClaimMillis = 300;
        engines.start(DeliveryEngine.builder().wakeSource(source), store, publisher, listener,
                EngineHarness.oneWorker(1, Duration.ofMillis(200)).workers(workers));
        await().atMost(SOON).until(() -> fake.claimCalls.get() >= 1);
        pause(500);
        int before = fake.claimCalls.get();
        int threadsBefore = store.claimThreads.size();
        pause(2_000);
        int claims = fake.claimCalls.get() - before;
        System.out.println("workers=" + workers + ": " + claims + " claims in 2 s, idle, by "
                + store.claimThreads.subList(threadsBefore, store.claimThreads.size()));
        // One worker: a 300 ms claim every 500 ms, 4 or 5 in 2 s. The promise: about the same whatever the
        // number of workers (2 s / 200 ms = 10 at the very most).
        assertThat(claims).as("claims in 2 s by an idle engine, wake interval 200 ms").isLessThanOrEqualTo(10);
    }

    // ------------------------------------------------------------------------------------------------ C

    /**
     * Promise 4 (idle cost). The outbox is empty and stays empty; worker 1's interval poll hangs for 4 s (a
     * stalled connection; it chose no rows). From a wake interval into the hang, claimHangs makes every idle
     * peer poll, each on its own interval: with 8 workers, 7 empty claims per wake interval for as long as the
     * one claim hangs, where the promise is one claim per wake interval whatever the number of workers (and
     * the hung claim chose nothing that could be due again). Control: 2 workers.
     */
    @ParameterizedTest(name = "workers {0}")
    @ValueSource(ints = {2, 8})
    void oneHungEmptyClaimMakesEveryIdlePeerPollEachInterval(int workers) throws Exception {
        engines.start(DeliveryEngine.builder().wakeSource(source), store, publisher, listener,
                EngineHarness.oneWorker(1, Duration.ofMillis(200)).workers(workers));
        await().atMost(SOON).until(() -> fake.claimCalls.get() >= 1);
        pause(300);
        store.hangMillis = 4_000;
        store.hangOn.set("queuebox-worker-1");
        assertEntered(store.entered, "worker 1's claim");
        int before = fake.claimCalls.get();
        int threadsBefore = store.claimThreads.size();
        pause(2_000);
        int claims = fake.claimCalls.get() - before;
        System.out.println("hung, workers=" + workers + ": " + claims + " claims in 2 s by "
                + store.claimThreads.subList(threadsBefore, store.claimThreads.size()));
        // 2 s at one claim per 200 ms interval: 10 at the most, whatever the number of workers.
        assertThat(claims).as("claims in 2 s by an idle engine whose worker 1 hangs, wake interval 200 ms")
                .isLessThanOrEqualTo(11);
    }

    /**
     * The fake store; its claim on the thread named in {@code hangOn} (once) answers only after
     * {@code hangMillis} (after it chose its rows); every claim takes {@code everyClaimMillis}; with
     * {@code renewHangs}, the first renew never answers (until the test ends).
     */
    private static final class SlowStore extends ForwardingOutboxStore {
        final FakeOutboxStore delegate;
        final AtomicReference<String> hangOn = new AtomicReference<>();
        final CountDownLatch entered = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final CountDownLatch renewEntered = new CountDownLatch(1);
        final CountDownLatch renewRelease = new CountDownLatch(1);
        final List<String> claimThreads = new CopyOnWriteArrayList<>();
        volatile long hangMillis = 8_000;
        volatile long everyClaimMillis = 0;
        volatile boolean renewHangs;

        SlowStore(FakeOutboxStore delegate) {
            super(delegate);
            this.delegate = delegate;
        }

        private static void sleep(CountDownLatch latch, long millis) {
            try {
                latch.await(millis, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public ClaimBatch claim(ClaimRequest request) {
            claimThreads.add(Thread.currentThread().getName());
            ClaimBatch batch = delegate.claim(request);
            if (everyClaimMillis > 0) {
                sleep(release, everyClaimMillis);
            }
            String name = hangOn.get();
            if (Thread.currentThread().getName().equals(name) && hangOn.compareAndSet(name, null)) {
                entered.countDown();
                sleep(release, hangMillis);
            }
            return batch;
        }

        @Override
        public int renew(LeaseToken lease, Duration leaseLength) {
            if (renewHangs) {
                renewEntered.countDown();
                sleep(renewRelease, 60_000);
            }
            return delegate.renew(lease, leaseLength);
        }

    }
}
