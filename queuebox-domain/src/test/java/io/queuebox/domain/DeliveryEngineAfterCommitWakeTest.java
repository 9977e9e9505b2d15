package io.queuebox.domain;

import static io.queuebox.domain.Fixtures.anEventFor;
import static io.queuebox.domain.Fixtures.order;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.AggregateRef;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.WakeReason;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Wake-ups straight after the commit that name the rows committed ({@code QueueBox.writeAndCommit}, the Spring
 * writer): no claim started before the commit can have seen those rows, so nothing waits for one; and a busy
 * worker looks again after its batch only when a row named meanwhile is still unclaimed (a row its own batch
 * held back), not when an idle peer already took it.
 */
class DeliveryEngineAfterCommitWakeTest {

    private static final Duration SOON = EngineHarness.SOON;

    private final FakeOutboxStore store = new FakeOutboxStore(Clock.systemUTC());
    private final FakePublisher publisher = new FakePublisher();
    private final RecordingListener listener = new RecordingListener();
    private final EngineHarness engines = new EngineHarness();

    @AfterEach
    void stopEngines() {
        store.claimReturnGate = null;
        engines.stopAll(publisher);
    }

    private DeliveryEngine startedWithTwoWorkers(DeliveryEngine.Builder builder) {
        DeliveryEngine engine = engines.start(builder, store, publisher, listener,
                EngineHarness.oneWorker(1, EngineHarness.LONG_INTERVAL).workers(2));
        // Each worker's first claim at start finds the table empty; from then on only wake-ups start claims.
        await().atMost(SOON).until(() -> store.claimCalls.get() >= 2);
        await().pollDelay(Duration.ofMillis(200)).atMost(SOON).until(() -> true);
        return engine;
    }

    private OutboxEvent committed(AggregateRef aggregate) {
        OutboxEvent event = anEventFor(aggregate);
        store.add(event);
        return event;
    }

    @Test
    void aRowTakenByTheIdlePeerCostsTheBusyWorkerNoSecondLook() {
        // After-commit wake-ups at 200 events/s: 14.4 % of claims came back empty. The worker whose batch was in
        // flight when a wake-up came looked again once its batch was recorded, though the idle peer that took the
        // wake-up had claimed the row already.
        DeliveryEngine engine = startedWithTwoWorkers(DeliveryEngine.builder());
        publisher.gate = new CountDownLatch(1);
        int claims = store.claimCalls.get();
        OutboxEvent first = committed(order("a"));
        engine.wakeFor(WakeReason.EXTERNAL, List.of(first.eventId()));
        await().atMost(SOON).until(() -> publisher.calls.get() == 1); // one worker took it and is publishing
        OutboxEvent second = committed(order("b"));

        engine.wakeFor(WakeReason.EXTERNAL, List.of(second.eventId()));
        await().atMost(SOON).until(() -> publisher.calls.get() == 2); // the idle peer took it
        publisher.gate.countDown();
        await().atMost(SOON).until(() -> store.count(RowStatus.SENT) == 2);
        await().pollDelay(Duration.ofMillis(300)).atMost(SOON).until(() -> true);

        assertThat(store.claimCalls.get()).as("claims: one per row, no look after the first batch for a row the peer"
                + " took").isEqualTo(claims + 2);
    }

    @Test
    void aRowTheBusyWorkersBatchHeldBackIsClaimedOnceThatBatchIsRecorded() {
        DeliveryEngine engine = startedWithTwoWorkers(DeliveryEngine.builder());
        AggregateRef x = order("x");
        publisher.gate = new CountDownLatch(1);
        OutboxEvent first = committed(x);
        engine.wakeFor(WakeReason.EXTERNAL, List.of(first.eventId()));
        await().atMost(SOON).until(() -> publisher.calls.get() == 1);
        int claims = store.claimCalls.get();
        OutboxEvent second = committed(x);

        engine.wakeFor(WakeReason.EXTERNAL, List.of(second.eventId()));
        await().atMost(SOON).until(() -> store.claimCalls.get() == claims + 1); // the peer: x is held back
        publisher.gate.countDown();

        await().alias("the second row of x, with a 30 s interval").atMost(SOON)
                .until(() -> store.count(RowStatus.SENT) == 2);
    }

    @Test
    void aRowNamedAfterItsCommitDoesNotWaitForAClaimThatStartedBeforeIt() {
        // A capture wake-up is held for a claim under way (the log reports a row after it committed, and that
        // claim may be taking it); a claim under way when the application's commit returned cannot have seen the
        // row, so its wake-up goes to an idle worker at once.
        DeliveryEngine engine = startedWithTwoWorkers(DeliveryEngine.builder().namedWakeHoldLimit(Duration.ofSeconds(10)));
        store.claimReturnGate = new CountDownLatch(1);
        int claims = store.claimCalls.get();
        engine.wake(WakeReason.EXTERNAL);
        await().atMost(SOON).until(() -> store.claimCalls.get() == claims + 1); // a claim under way, answer delayed
        OutboxEvent event = committed(order("a"));

        engine.wakeFor(WakeReason.EXTERNAL, List.of(event.eventId()));

        await().alias("the idle worker claims the row while the other claim is still under way").atMost(Duration.ofSeconds(1))
                .until(() -> store.claimCalls.get() == claims + 2);
        store.claimReturnGate.countDown();
        await().atMost(SOON).until(() -> store.count(RowStatus.SENT) == 1);
    }

    @Test
    void aWakeUpNamingSeveralRowsStartsOneClaim() {
        DeliveryEngine engine = startedWithTwoWorkers(DeliveryEngine.builder());
        int claims = store.claimCalls.get();
        List<UUID> ids = List.of(committed(order("a")).eventId(), committed(order("b")).eventId(),
                committed(order("c")).eventId());

        engine.wakeFor(WakeReason.EXTERNAL, ids);

        await().atMost(SOON).until(() -> store.count(RowStatus.SENT) == 3);
        await().pollDelay(Duration.ofMillis(300)).atMost(SOON).until(() -> true);
        assertThat(store.claimCalls.get()).as("claims for one commit of three rows").isEqualTo(claims + 1);
    }
}
