package io.queuebox.domain;

import static io.queuebox.domain.Fixtures.anEventFor;
import static io.queuebox.domain.Fixtures.order;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.AggregateRef;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.WakeReason;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Second adversarial review of the named-news change (40b7238..3eb9b03): a serial second look holds the named rows
 * of its news for itself; a busy worker leaves a row to a peer's claim under way that started after the row was
 * named; an idle worker skips a ticket only named news offered while no named row awaits a claim; a named row
 * released after its claim awaits a claim again. Two workers and a 30 s interval unless a test says otherwise;
 * claims are gated in a forwarding store, never inside the fake's monitor.
 */
class DeliveryEngineNamedNewsReview2Test {

    private static final Duration SOON = EngineHarness.SOON;

    private final NamedNewsRig rig = new NamedNewsRig();
    private final FakeOutboxStore store = rig.store;
    private final FakePublisher publisher = rig.publisher;
    private final java.util.concurrent.atomic.AtomicInteger claimsEntered = rig.claimsEntered;
    private final java.util.concurrent.atomic.AtomicInteger claimsLooked = rig.claimsLooked;
    private final AtomicReference<CountDownLatch> nextClaimLooksLate = rig.nextClaimLooksLate;
    private final AtomicReference<CountDownLatch> nextClaimAnswersLate = rig.nextClaimAnswersLate;
    private final AtomicReference<RuntimeException> nextClaimThrows = rig.nextClaimThrows;
    private final AtomicBoolean notReachedAnswered = rig.notReachedAnswered;
    private final AtomicBoolean takenByAnotherRelay = rig.takenByAnotherRelay;

    @AfterEach
    void stopEngines() {
        rig.close();
    }

    private CountDownLatch gate() {
        return rig.gate();
    }

    private CountDownLatch publishGate(String aggregate) {
        return rig.publishGate(aggregate);
    }

    private DeliveryEngine started(DeliveryEngine.Builder builder, int workers, int depth) {
        return rig.started(builder, workers, depth);
    }

    private OutboxEvent committedAndNamed(DeliveryEngine engine, AggregateRef aggregate) {
        return rig.committedAndNamed(engine, aggregate);
    }

    private boolean sent(OutboxEvent event) {
        return rig.sent(event);
    }

    // ------------------------------------------------------------------------------------------ cost

    /**
     * Cost, two relays on one table (or a lease lost while the broker was not reached). r and q are committed and
     * named together; one claim takes both, q is acked and r answered NotAttempted, so r is released, and the other
     * relay claims it at once. Since 3eb9b03 the release puts r back among the rows awaiting a claim as UNNUMBERED,
     * i.e. later than any news, and nothing of this engine ever claims it again: it stays there until 4,096 named rows
     * push it out. From then on every partial batch during whose flight any named news came counts as worth a look,
     * although an idle peer took that news's row (before the change no look: the named row was claimed), and the look
     * holds r for itself, so its end (r unclaimed) wakes an idle worker for one more claim; and the idle worker's skip
     * (c) never applies while r is there. Per round: two claims before the change (the busy worker's batch, the peer's
     * claim for the news), four after (plus the second look, which comes back empty, and the claim its end wakes, also
     * empty). The same happens in one relay when a batch's lease was lost (or a queued batch lapsed at depth 2) and
     * its named rows are released after another claim took them: released() re-adds them before store.release says
     * how many it released.
     */
    @Test
    void costANamedRowReleasedAndTakenByAnotherRelayMakesEveryBatchWithNewsLookAgain() {
        DeliveryEngine engine = started(DeliveryEngine.builder(), 2, 1);
        OutboxEvent r = anEventFor(order("r"));
        OutboxEvent q = anEventFor(order("q"));
        rig.notReachedOnce = r.eventId();
        rig.takenByAnotherRelayOnRelease = r.eventId();
        store.add(r, q);
        engine.wakeFor(WakeReason.EXTERNAL, List.of(r.eventId(), q.eventId()));
        await().atMost(SOON).until(() -> sent(q) && takenByAnotherRelay.get());
        EngineHarness.pause(200);

        int rounds = 3;
        int entered = claimsEntered.get();
        for (int round = 0; round < rounds; round++) {
            String slow = "slow" + round;
            CountDownLatch slowPublishes = publishGate(slow);
            int calls = publisher.calls.get();
            OutboxEvent batch = committedAndNamed(engine, order(slow)); // one worker claims it and publishes slowly
            await().atMost(SOON).until(() -> publisher.calls.get() == calls + 1);
            OutboxEvent news = committedAndNamed(engine, order("news" + round)); // the idle worker takes it
            await().atMost(SOON).until(() -> sent(news));
            EngineHarness.pause(100);
            slowPublishes.countDown(); // the busy worker's partial batch is recorded: news came, its row claimed
            await().atMost(SOON).until(() -> sent(batch));
            EngineHarness.pause(300);
        }

        assertThat(claimsEntered.get() - entered)
                .as("claims in %d rounds: the busy worker's batch and the idle worker's claim for the news, each", rounds)
                .isEqualTo(2 * rounds);
    }

    // -------------------------------------------------------------- promise 4, variants (sound so far)

    /**
     * Variant of the first review's hung second look: the second look fails at once (the connection broke) instead
     * of hanging. Its end settles r unclaimed and wakes the engine: the idle peer claims r.
     */
    @Test
    void aSecondLookThatFailsDoesNotKeepItsRowFromTheIdlePeer() {
        DeliveryEngine engine = started(DeliveryEngine.builder(), 2, 1);
        CountDownLatch aPublishes = publishGate("a");
        committedAndNamed(engine, order("a"));
        await().atMost(SOON).until(() -> publisher.calls.get() == 1); // worker A publishing a
        CountDownLatch answer = gate();
        nextClaimAnswersLate.set(answer);
        int entered = claimsEntered.get();
        int looked = claimsLooked.get();
        engine.wake(WakeReason.EXTERNAL); // worker B claims: nothing due; its answer comes back late
        await().atMost(SOON).until(() -> claimsLooked.get() == looked + 1);
        nextClaimThrows.set(new IllegalStateException("connection reset"));
        OutboxEvent r = committedAndNamed(engine, order("r")); // no idle worker: a ticket

        aPublishes.countDown(); // A looks again after its batch, and that claim fails
        await().atMost(SOON).until(() -> claimsEntered.get() == entered + 2);
        answer.countDown(); // B's claim comes back empty: B is idle

        await().alias("r, while A's second look failed and A pauses").atMost(Duration.ofMillis(900))
                .until(() -> sent(r));
    }

    /**
     * Several rows named in one wake-up while A publishes x1: B's claim, started after, takes y and finds x2 held back
     * by A's batch; its answer is late. A's partial batch is recorded while B's claim is under way: both rows are held
     * for B's claim (a 10 s hold limit, so only that claim's end can settle them). B's claim ends with y: x2 is settled
     * unclaimed and wakes the engine.
     */
    @Test
    void rowsOfOneWakeUpHeldForAPeersClaimThatTakesOnlySomeOfThemWakeTheEngineForTheRest() {
        DeliveryEngine engine = started(DeliveryEngine.builder().namedWakeHoldLimit(Duration.ofSeconds(10)), 2, 1);
        AggregateRef x = order("x");
        CountDownLatch xPublishes = publishGate("x");
        OutboxEvent x1 = committedAndNamed(engine, x);
        await().atMost(SOON).until(() -> publisher.calls.get() == 1); // A publishing x1
        CountDownLatch answer = gate();
        nextClaimAnswersLate.set(answer);
        int looked = claimsLooked.get();
        OutboxEvent x2 = anEventFor(x);
        OutboxEvent y = anEventFor(order("y"));
        store.add(x2, y);
        engine.wakeFor(WakeReason.EXTERNAL, List.of(x2.eventId(), y.eventId()));
        await().atMost(SOON).until(() -> claimsLooked.get() == looked + 1); // B's claim chose y; x2 held back
        xPublishes.countDown();
        await().atMost(SOON).until(() -> sent(x1)); // x1 recorded
        EngineHarness.pause(100);
        answer.countDown();

        await().alias("x2, after the peer's claim it was held for came back with y only").atMost(SOON)
                .until(() -> sent(x2) && sent(y));
    }
}
