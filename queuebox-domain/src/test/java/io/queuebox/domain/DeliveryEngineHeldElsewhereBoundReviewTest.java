package io.queuebox.domain;

import static io.queuebox.domain.Fixtures.anEventFor;
import static io.queuebox.domain.Fixtures.order;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.OutboxEvent;
import java.time.Clock;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Review evidence (holds): while claims come back heldElsewhere, a polling-only engine (no wake-up for a new row)
 * still takes a new, claimable row within the 2 s cap of HeldElsewhereBackoff, however long the backoff has lasted;
 * and the stretch never goes below the interval for an interval above the cap.
 */
class DeliveryEngineHeldElsewhereBoundReviewTest {

    private static final Duration INTERVAL = Duration.ofMillis(200);

    private final FakeOutboxStore store = new FakeOutboxStore(Clock.systemUTC());
    private final FakePublisher publisher = new FakePublisher();
    private final RecordingListener listener = new RecordingListener();
    private final EngineHarness engines = new EngineHarness();

    @AfterEach
    void stop() {
        engines.stopAll(publisher);
    }

    @Test
    void aRowInsertedWithoutAWakeUpWhileBackingOffIsTakenWithinTheCap() {
        OutboxEvent a1 = anEventFor(order("a"));
        OutboxEvent a2 = anEventFor(order("a"));
        store.add(a1, a2);
        store.stealLease(a1.eventId(), Duration.ofMinutes(1));
        engines.start(DeliveryEngine.builder(), store, publisher, listener, EngineHarness.oneWorker(2, INTERVAL));
        EngineHarness.pause(4_000); // backed off to the cap (200 -> 400, 800, 1600, 2000 ms)

        OutboxEvent c1 = anEventFor(order("c"));
        long added = System.nanoTime();
        store.add(c1);
        await().atMost(Duration.ofSeconds(4)).until(() -> publisher.acked.contains(c1.eventId()));
        assertThat(Duration.ofNanos(System.nanoTime() - added)).isLessThan(HeldElsewhereBackoff.CAP.plusMillis(300));
    }

    @Test
    void theStretchIsCappedAndNeverBelowTheInterval() {
        HeldElsewhereBackoff backoff = new HeldElsewhereBackoff();
        for (int i = 0; i < 40; i++) {
            backoff.heldElsewhere(System.nanoTime());
        }
        assertThat(backoff.pollInterval(Duration.ofMillis(100))).isEqualTo(Duration.ofMillis(1_600));
        assertThat(backoff.pollInterval(Duration.ofMillis(500))).isEqualTo(Duration.ofSeconds(2));
        assertThat(backoff.pollInterval(Duration.ofSeconds(5))).isEqualTo(Duration.ofSeconds(5));
    }
}
