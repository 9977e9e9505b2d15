package io.queuebox.domain;

import static io.queuebox.domain.Fixtures.anEventFor;
import static io.queuebox.domain.Fixtures.order;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.WakeReason;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * While its claims find every due row held back by rows another claimer holds (ClaimBatch heldElsewhere), the
 * engine polls less often (HeldElsewhereBackoff), and still claims at once for a wake-up, and takes the rows soon
 * after the other claimer lets them go.
 */
class DeliveryEngineHeldElsewhereTest {

    private static final Duration INTERVAL = Duration.ofMillis(50);

    private final FakeOutboxStore store = new FakeOutboxStore(Clock.systemUTC());
    private final FakePublisher publisher = new FakePublisher();
    private final RecordingListener listener = new RecordingListener();
    private final EngineHarness engines = new EngineHarness();

    @AfterEach
    void stop() {
        engines.stopAll(publisher);
    }

    /** a1 and b1 leased by another claimer for {@code lease}; a2 and b2 due behind them. */
    private List<OutboxEvent> headsHeldElsewhere(Duration lease) {
        OutboxEvent a1 = anEventFor(order("a"));
        OutboxEvent b1 = anEventFor(order("b"));
        OutboxEvent a2 = anEventFor(order("a"));
        OutboxEvent b2 = anEventFor(order("b"));
        store.add(a1, b1, a2, b2);
        store.stealLease(a1.eventId(), lease);
        store.stealLease(b1.eventId(), lease);
        return List.of(a1, b1, a2, b2);
    }

    private DeliveryEngine startEngine() {
        return engines.start(DeliveryEngine.builder(), store, publisher, listener, EngineHarness.oneWorker(1, INTERVAL));
    }

    @Test
    void claimsThatFindEveryDueRowHeldElsewherePollLessOften() {
        headsHeldElsewhere(Duration.ofMinutes(1));
        startEngine();
        EngineHarness.pause(1_600);
        int heldElsewhere = store.claimCalls.get();

        // Backing off: claims about 0, 100, 300, 700, 1100 and 1500 ms in (the interval doubled up to 8 times);
        // at the interval, about 32.
        assertThat(heldElsewhere).as("claims in 1.6 s at a 50 ms interval, each finding a1 and b1 held elsewhere")
                .isBetween(3, 10);
        assertThat(store.count(RowStatus.SENT)).isZero();
    }

    @Test
    void controlAnIdleEnginePollsAtItsInterval() {
        startEngine();
        EngineHarness.pause(1_600);
        assertThat(store.claimCalls.get()).as("claims in 1.6 s at a 50 ms interval, nothing due").isGreaterThan(15);
    }

    @Test
    void aWakeUpIsNotDelayedWhileBackingOff() {
        headsHeldElsewhere(Duration.ofMinutes(1));
        DeliveryEngine engine = startEngine();
        EngineHarness.pause(1_000);
        OutboxEvent c1 = anEventFor(order("c"));
        store.add(c1);
        long woken = System.nanoTime();
        engine.wake(WakeReason.EXTERNAL);

        await().atMost(EngineHarness.SOON).until(() -> publisher.acked.contains(c1.eventId()));
        assertThat(Duration.ofNanos(System.nanoTime() - woken))
                .as("c1's wake-up claims at once, not at the stretched interval (400 ms)")
                .isLessThan(Duration.ofMillis(300));
    }

    @Test
    void theRowsAreTakenSoonAfterTheOtherClaimerLetsThemGo() {
        List<OutboxEvent> rows = headsHeldElsewhere(Duration.ofMillis(1_000));
        startEngine();

        // The other claimer's lease runs out after 1 s (as a held claim's rows come free when its relay dies):
        // the backed-off poll takes all four within the stretched interval.
        await().atMost(Duration.ofMillis(1_000 + 8 * INTERVAL.toMillis() + 1_000))
                .until(() -> store.count(RowStatus.SENT) == 4);
        assertThat(store.sentOrder).containsExactly(rows.get(0).eventId(), rows.get(1).eventId(),
                rows.get(2).eventId(), rows.get(3).eventId());
    }
}
