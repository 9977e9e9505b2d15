package io.queuebox.domain;

import static io.queuebox.domain.Fixtures.order;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.AggregateRef;
import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.WakeReason;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Adversarial review of e0a07ec (named news: a serial worker's second look takes the pending ticket; a named row is
 * held for a peer's claim under way instead of a second look; an idle worker woken by a ticket only named news
 * offered goes on waiting while every named row is claimed). Two workers and a 30 s interval throughout, as in
 * DeliveryEngineNamedNewsClaimsTest; claims are gated in a forwarding store, never inside the fake's monitor.
 */
class DeliveryEngineNamedNewsReviewTest {

    private static final Duration SOON = EngineHarness.SOON;

    private final NamedNewsRig rig = new NamedNewsRig();
    private final FakeOutboxStore store = rig.store;
    private final FakePublisher publisher = rig.publisher;
    private final java.util.concurrent.atomic.AtomicInteger claimsEntered = rig.claimsEntered;
    private final java.util.concurrent.atomic.AtomicInteger claimsLooked = rig.claimsLooked;
    private final AtomicReference<CountDownLatch> nextClaimLooksLate = rig.nextClaimLooksLate;
    private final AtomicReference<CountDownLatch> nextClaimAnswersLate = rig.nextClaimAnswersLate;
    private final AtomicBoolean notReachedAnswered = rig.notReachedAnswered;
    private final CountDownLatch aPublishes = rig.publishGate("a");
    private final CountDownLatch bPublishes = rig.publishGate("b");

    @AfterEach
    void stopEngines() {
        rig.close();
    }

    private CountDownLatch gate() {
        return rig.gate();
    }

    /** Two workers at {@code depth}, a 30 s interval; "a" publishes once aPublishes opens, "b" once bPublishes does. */
    private DeliveryEngine started(DeliveryEngine.Builder builder, int depth) {
        return rig.started(builder, 2, depth);
    }

    private OutboxEvent committedAndNamed(DeliveryEngine engine, AggregateRef aggregate) {
        return rig.committedAndNamed(engine, aggregate);
    }

    /**
     * Promise 4 (c). Worker 1 publishes b; worker 2's claim, woken for d, is under way when c is committed and named:
     * no idle worker, so c's wake-up waits as a ticket (named news only). That claim takes d and c; the publisher acks
     * d and answers c NotAttempted, so c is released, due at once, with nothing acked missing (no outage pause). c's
     * ticket is still pending: before e0a07ec worker 2 took it once its batch was recorded and claimed c again at
     * once. Now the ticket counts as one whose rows were all claimed (c left awaitingClaim when it was claimed, and
     * its release puts nothing back, marks no skipped wake-up), so worker 2 goes on waiting, worker 1 after b sees
     * no unclaimed news, and c waits for the 30 s interval. The skipped ticket is a wake-up about c dropped while c
     * was due: the release rule ("a row released whose wake-up was skipped wakes the engine") does not cover it.
     */
    @ParameterizedTest(name = "pipeline depth {0}")
    @ValueSource(ints = {1, 2})
    void aRowReleasedAsNotAttemptedWhileItsTicketWaitedIsClaimedForThatTicket(int depth) {
        DeliveryEngine engine = started(DeliveryEngine.builder(), depth);
        committedAndNamed(engine, order("b"));
        await().atMost(SOON).until(() -> publisher.calls.get() == 1); // worker 1 publishing b
        CountDownLatch look = gate();
        nextClaimLooksLate.set(look);
        int entered = claimsEntered.get();
        committedAndNamed(engine, order("d")); // worker 2 claims; its claim looks once the gate opens
        await().atMost(SOON).until(() -> claimsEntered.get() == entered + 1);
        OutboxEvent c = committedAndNamed(engine, order("c")); // no idle worker: a ticket
        rig.notReachedOnce = c.eventId();

        look.countDown(); // the claim takes d and c: d acked, c not attempted and released
        await().atMost(SOON).until(notReachedAnswered::get);
        bPublishes.countDown();

        await().alias("c, released as not attempted while the ticket its wake-up left was pending (30 s interval)")
                .atMost(SOON).until(() -> store.row(c.eventId()).status == RowStatus.SENT);
    }

    /**
     * Promise 4 (a), a hung claim. Worker A publishes a; worker B's claim (woken by an unnamed wake-up) chose its
     * rows (none due) and its answer is on its way when r is committed and named: no idle worker, a ticket. A's
     * batch is recorded; news came meanwhile, so A looks again, and since e0a07ec that second look takes r's ticket.
     * A's claim then hangs before it looks at the table (a stalled connection). B's claim comes back empty: B is idle,
     * but the ticket is gone, no row is held (no claim started after r was named had ended or was asked about), so
     * nothing wakes B: r waits for A's hung claim, or for the claim watch's poll stand-in 30 s after that claim
     * started. Before e0a07ec B took the ticket and claimed r at once. The promise: a hung claim of one worker must
     * not keep a row from the other workers beyond the hold limit (20 ms).
     */
    @Test
    void aTicketTakenByASecondLookThatHangsDoesNotKeepItsRowFromTheIdlePeer() {
        DeliveryEngine engine = started(DeliveryEngine.builder(), 1);
        committedAndNamed(engine, order("a"));
        await().atMost(SOON).until(() -> publisher.calls.get() == 1); // worker A publishing a
        CountDownLatch answer = gate();
        nextClaimAnswersLate.set(answer);
        int entered = claimsEntered.get();
        int looked = claimsLooked.get();
        engine.wake(WakeReason.EXTERNAL); // worker B claims: nothing due; its answer comes back late
        await().atMost(SOON).until(() -> claimsLooked.get() == looked + 1);
        CountDownLatch stalled = gate();
        nextClaimLooksLate.set(stalled); // the next claim to start hangs before it looks at the rows
        OutboxEvent r = committedAndNamed(engine, order("r")); // no idle worker: a ticket

        aPublishes.countDown(); // A looks again after its batch, and that claim hangs
        await().atMost(SOON).until(() -> claimsEntered.get() == entered + 2);
        answer.countDown(); // B's claim comes back empty: B is idle

        await().alias("r, named while every worker was busy, while A's second look hangs (30 s interval)")
                .atMost(SOON).until(() -> store.row(r.eventId()).status == RowStatus.SENT);
    }

    /**
     * Cost (b), not a promise. A's batch of a holds back a later row (ClaimBatch holdsBack: HOLDING), so A claims
     * again after it whatever the news. The second row of a was named while A's batch was out; B's claim for it found
     * it held back and its answer is still on its way at A's decision: since e0a07ec A holds the row for B's claim
     * although A's own HELD_BACK claim follows anyway. B's claim ends without the row before A's claim looks (the
     * window between A's decision and its look, widened here), so the hold wakes the engine: B claims the row, and A's
     * claim comes back empty. Three claims after the row was named; before e0a07ec two (B's, and A's that took it).
     */
    @Test
    void costAHoldingWorkerHoldsARowForAPeersClaimAndClaimsAgainAnyway() {
        DeliveryEngine engine = started(DeliveryEngine.builder().namedWakeHoldLimit(Duration.ofSeconds(10)), 1);
        AggregateRef a = order("a");
        rig.holdsBackOnce.set("a");
        committedAndNamed(engine, a);
        await().atMost(SOON).until(() -> publisher.calls.get() == 1); // worker A publishing a, a HOLDING batch
        CountDownLatch answer = gate();
        nextClaimAnswersLate.set(answer);
        int entered = claimsEntered.get();
        int looked = claimsLooked.get();
        OutboxEvent second = committedAndNamed(engine, a); // B's claim finds it held back; its answer is late
        await().atMost(SOON).until(() -> claimsLooked.get() == looked + 1);
        CountDownLatch look = gate();
        nextClaimLooksLate.set(look);

        aPublishes.countDown(); // A records a and claims again (HELD_BACK); that claim looks once the gate opens
        await().atMost(SOON).until(() -> claimsEntered.get() == entered + 2);
        answer.countDown(); // B's claim ends without the row
        EngineHarness.pause(200);
        look.countDown();
        await().atMost(SOON).until(() -> store.row(second.eventId()).status == RowStatus.SENT);
        EngineHarness.pause(300);

        assertThat(claimsEntered.get()).as("claims after the second row of a was named: B's, A's HELD_BACK look")
                .isEqualTo(entered + 2);
    }
}
