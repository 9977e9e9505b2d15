package io.queuebox.testkit.capture;

import static io.queuebox.testkit.fixtures.OutboxFixtures.anEvent;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.queuebox.domain.DeliveryEngine;
import io.queuebox.domain.DeliverySettings;
import io.queuebox.ports.DeliveryListener;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.testkit.outbox.InMemoryOutboxStore;
import io.queuebox.testkit.publisher.RecordingPublisher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * {@link ManualWakeSource#wakeFor(java.util.Collection)} drives a real engine as one poll of the log does: the rows of
 * the poll start one claim, and a poll about rows the engine claimed already starts none.
 */
class ManualWakeSourceEngineTest {

    private final InMemoryOutboxStore store = InMemoryOutboxStore.create();
    private final RecordingPublisher broker = RecordingPublisher.acking();
    private final ManualWakeSource source = new ManualWakeSource();
    private final AtomicInteger claims = new AtomicInteger();

    @Test
    void theRowsOfOnePollStartOneClaimAndAPollAboutClaimedRowsStartsNone() {
        DeliveryEngine engine = DeliveryEngine.builder().store(store).publisher(broker)
                // Only the wake source starts claims here: the interval outlasts the test.
                .settings(DeliverySettings.builder().workers(2).batchSize(100).wakeInterval(Duration.ofMinutes(10)).build())
                .wakeSource(source)
                .listener(new DeliveryListener() {
                    @Override
                    public void onClaimed(int rows, Duration elapsed) {
                        claims.incrementAndGet();
                    }
                })
                .build();
        engine.start();
        try {
            int atStart = claimsOnceQuiet();

            List<OutboxEvent> poll = List.of(anEvent(), anEvent(), anEvent());
            store.enqueueAll(poll);
            assertThat(source.wakeFor(ids(poll))).isTrue();
            await().atMost(Duration.ofSeconds(10)).until(() -> broker.delivered().size() == 3);
            assertThat(claimsOnceQuiet() - atStart).as("one poll, one claim").isEqualTo(1);

            assertThat(source.wakeFor(ids(poll))).isTrue();
            await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(2))
                    .untilAsserted(() -> assertThat(claims.get() - atStart).as("no claim for rows claimed here").isEqualTo(1));

            OutboxEvent later = anEvent();
            store.enqueue(later);
            assertThat(source.wakeFor(ids(List.of(poll.get(0), later)))).as("a poll with one new row").isTrue();
            await().atMost(Duration.ofSeconds(10)).until(() -> broker.delivered().size() == 4);
            assertThat(source.wakeUps()).isEqualTo(3);
        } finally {
            assertThat(engine.stop(Duration.ofSeconds(5))).isTrue();
        }
        assertThat(broker.delivered()).extracting(OutboxEvent::eventId).doesNotHaveDuplicates();
    }

    @Test
    void aPollMustNameARowAndEveryRowItNames() {
        source.start(reason -> { });

        assertThatThrownBy(() -> source.wakeFor(List.of())).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("eventIds");
        assertThatThrownBy(() -> source.wakeFor(Arrays.asList(UUID.randomUUID(), null)))
                .isInstanceOf(NullPointerException.class);
        assertThat(source.wakeUps()).as("a refused poll wakes nobody").isZero();
        source.close();
        assertThat(source.wakeFor(List.of(UUID.randomUUID()))).as("closed: the wake-up is lost").isFalse();
    }

    /** The claims counted once none has come for a while: the engine's first claims at start have ended. */
    private int claimsOnceQuiet() {
        AtomicInteger seen = new AtomicInteger(-1);
        await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(150))
                .until(() -> seen.getAndSet(claims.get()) == claims.get());
        return claims.get();
    }

    private static List<UUID> ids(List<OutboxEvent> events) {
        List<UUID> ids = new ArrayList<>();
        events.forEach(event -> ids.add(event.eventId()));
        return ids;
    }
}
