package io.queuebox.domain;

import static io.queuebox.domain.Fixtures.anEventFor;
import static io.queuebox.domain.Fixtures.order;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.WakeReason;
import io.queuebox.ports.WakeSource;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A wake-up that names its row ({@link WakeSource.WakeListener#wakeFor}): the capture connector reads the
 * row from the log some milliseconds after it committed, and by then this engine has often claimed it. Such a
 * wake-up starts no claim (it could only come back empty); any other row wakes as usual.
 */
class DeliveryEngineWakeForTest {

    private static final Duration SOON = EngineHarness.SOON;

    private final FakeOutboxStore store = new FakeOutboxStore(Clock.systemUTC());
    private final FakePublisher publisher = new FakePublisher();
    private final RecordingListener listener = new RecordingListener();
    private final EngineHarness engines = new EngineHarness();
    private final HandingWakeSource source = new HandingWakeSource();

    @AfterEach
    void stopEngines() {
        engines.stopAll(publisher);
    }

    private DeliveryEngine started(int depth) {
        DeliveryEngine engine = engines.start(DeliveryEngine.builder().wakeSource(source), store, publisher, listener,
                EngineHarness.oneWorker(depth, EngineHarness.LONG_INTERVAL));
        // The first claim at start finds the table empty; from then on only wake-ups start claims.
        await().atMost(SOON).until(() -> store.claimCalls.get() >= 1);
        return engine;
    }

    private OutboxEvent added() {
        OutboxEvent event = anEventFor(order(UUID.randomUUID().toString()));
        store.add(event);
        return event;
    }

    private int claimsAfterQuiet() {
        int claims = store.claimCalls.get();
        await().pollDelay(Duration.ofMillis(300)).atMost(SOON).until(() -> true);
        return claims;
    }

    @Test
    void aWakeUpAboutARowThisEngineClaimedAlreadyStartsNoClaim() {
        started(1);
        OutboxEvent event = added();
        // The first wake-up that names a row starts the remembering: before it no source named one.
        source.listener.get().wakeFor(WakeReason.CAPTURE, event.eventId());
        await().atMost(SOON).until(() -> store.count(RowStatus.SENT) == 1);
        int claims = claimsAfterQuiet();

        for (int i = 0; i < 5; i++) {
            source.listener.get().wakeFor(WakeReason.CAPTURE, event.eventId());
        }

        await().pollDelay(Duration.ofMillis(300)).atMost(SOON).until(() -> true);
        assertThat(store.claimCalls.get()).as("claims after five wake-ups about a row already claimed").isEqualTo(claims);
    }

    @Test
    void aWakeUpAboutARowNotClaimedYetClaimsIt() {
        started(1);
        claimsAfterQuiet();
        OutboxEvent event = added();

        source.listener.get().wakeFor(WakeReason.CAPTURE, event.eventId());

        await().atMost(SOON).until(() -> store.count(RowStatus.SENT) == 1);
        assertThat(store.sentOrder).containsExactly(event.eventId());
    }

    @ParameterizedTest
    @EnumSource(value = WakeReason.class, names = {"CAPTURE", "NOTIFY"})
    void aWakeUpAboutARowTheClaimUnderWayIsTakingWaitsForItAndStartsNoOtherClaim(WakeReason reason) {
        // Debezium hands over a poll's records together: the first wakes a claim, and the news of the next
        // rows, which that claim is taking, woke the idle peer into a claim that found them locked.
        // The claim is held open for 200 ms here, longer than the hold limit a real claim gets.
        engines.start(DeliveryEngine.builder().wakeSource(source).namedWakeHoldLimit(Duration.ofSeconds(5)), store,
                publisher, listener, EngineHarness.oneWorker(1, EngineHarness.LONG_INTERVAL).workers(2));
        await().atMost(SOON).until(() -> store.claimCalls.get() >= 2);
        int claims = claimsAfterQuiet();
        OutboxEvent first = added();
        OutboxEvent second = added();
        store.claimReturnGate = new CountDownLatch(1);
        // Notifications and the log both report a commit after it happened, when a claim may be taking its rows.
        source.listener.get().wakeFor(reason, List.of(first.eventId()));
        await().atMost(SOON).until(() -> store.claimCalls.get() == claims + 1); // it has chosen both rows

        source.listener.get().wakeFor(reason, List.of(second.eventId()));
        await().pollDelay(Duration.ofMillis(200)).atMost(SOON).until(() -> true);
        store.claimReturnGate.countDown();

        await().atMost(SOON).until(() -> store.count(RowStatus.SENT) == 2);
        await().pollDelay(Duration.ofMillis(300)).atMost(SOON).until(() -> true);
        assertThat(store.claimCalls.get()).as("claims: the one that took both rows").isEqualTo(claims + 1);
    }

    @Test
    void aWakeUpAboutARowTheClaimUnderWayMissedClaimsItWhenThatClaimEnds() {
        started(1);
        claimsAfterQuiet();
        OutboxEvent first = added();
        store.claimReturnGate = new CountDownLatch(1);
        source.listener.get().wakeFor(WakeReason.CAPTURE, first.eventId());
        await().atMost(SOON).until(() -> store.row(first.eventId()).lease != null); // chosen, not yet returned
        OutboxEvent late = added(); // committed after the claim under way chose its rows

        source.listener.get().wakeFor(WakeReason.CAPTURE, late.eventId());
        store.claimReturnGate.countDown();

        await().alias("the row the claim under way missed, delivered without waiting the 30 s interval")
                .atMost(SOON).until(() -> store.count(RowStatus.SENT) == 2);
        assertThat(store.sentOrder).containsExactly(first.eventId(), late.eventId());
    }

    @Test
    void aRowAddedAfterTheClaimedOneIsStillClaimedByItsOwnWakeUp() {
        started(2);
        OutboxEvent first = added();
        source.listener.get().wakeFor(WakeReason.CAPTURE, first.eventId());
        await().atMost(SOON).until(() -> store.count(RowStatus.SENT) == 1);
        OutboxEvent second = added();

        source.listener.get().wakeFor(WakeReason.CAPTURE, first.eventId());
        source.listener.get().wakeFor(WakeReason.CAPTURE, second.eventId());

        await().atMost(SOON).until(() -> store.count(RowStatus.SENT) == 2);
        assertThat(store.sentOrder).containsExactly(first.eventId(), second.eventId());
    }
}
