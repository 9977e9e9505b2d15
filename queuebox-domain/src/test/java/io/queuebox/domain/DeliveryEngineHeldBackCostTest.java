package io.queuebox.domain;

import static io.queuebox.domain.Fixtures.anEventFor;
import static io.queuebox.domain.Fixtures.order;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.AggregateRef;
import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.WakeReason;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What the look-again after a batch that held rows back costs: nothing when no row was held back. From the review
 * of a first fix, which looked again after every partial batch whose claim overlapped another claim (two claims of
 * unrelated rows cost two empty looks; a hung claim made every claim of the other workers cost two).
 */
class DeliveryEngineHeldBackCostTest {

    private static final Duration SOON = EngineHarness.SOON;

    private final FakeOutboxStore fake = new FakeOutboxStore(Clock.systemUTC());
    private final FakePublisher publisher = new FakePublisher();
    private final RecordingListener listener = new RecordingListener();
    private final EngineHarness engines = new EngineHarness();
    private final List<CountDownLatch> gates = new java.util.concurrent.CopyOnWriteArrayList<>();

    @AfterEach
    void stopEngines() {
        gates.forEach(CountDownLatch::countDown);
        engines.stopAll(publisher);
    }

    private CountDownLatch gate() {
        CountDownLatch gate = new CountDownLatch(1);
        gates.add(gate);
        return gate;
    }

    private OutboxEvent committed(AggregateRef aggregate) {
        OutboxEvent event = anEventFor(aggregate);
        fake.add(event);
        return event;
    }

    /** Claims that wait, once they have chosen their rows, for the gate queued for them (in claim order). */
    private static final class GatedClaims extends ForwardingOutboxStore {
        final java.util.Queue<CountDownLatch> returnGates = new java.util.concurrent.ConcurrentLinkedQueue<>();
        final java.util.Queue<CountDownLatch> startGates = new java.util.concurrent.ConcurrentLinkedQueue<>();
        final AtomicInteger claims = new AtomicInteger();
        final AtomicInteger empty = new AtomicInteger();

        GatedClaims(FakeOutboxStore fake) {
            super(fake);
        }

        @Override
        public ClaimBatch claim(ClaimRequest request) {
            CountDownLatch start = startGates.poll();
            if (start != null) {
                EngineHarness.waitFor(start, 10_000); // a claim hung before it looked at the table
            }
            CountDownLatch back = returnGates.poll();
            ClaimBatch batch = super.claim(request);
            claims.incrementAndGet();
            if (batch.isEmpty()) {
                empty.incrementAndGet();
            }
            if (back != null) {
                EngineHarness.waitFor(back, 5_000);
            }
            return batch;
        }
    }

    private DeliveryEngine startedWithTwoWorkers(GatedClaims store) {
        DeliveryEngine engine = engines.start(DeliveryEngine.builder(), store, publisher, listener,
                EngineHarness.oneWorker(1, EngineHarness.LONG_INTERVAL).workers(2));
        await().atMost(SOON).until(() -> store.claims.get() >= 2);
        EngineHarness.pause(200);
        return engine;
    }

    /**
     * Two claims of two unrelated rows (two aggregates) run at the same time, as two idle workers do for two
     * after-commit wake-ups a millisecond apart. Neither batch holds anything back: one claim per row.
     */
    @Test
    void twoOverlappingClaimsOfUnrelatedRowsCostOneClaimEach() {
        GatedClaims store = new GatedClaims(fake);
        DeliveryEngine engine = startedWithTwoWorkers(store);
        int claims = store.claims.get();
        int empty = store.empty.get();
        CountDownLatch firstBack = gate();
        CountDownLatch secondBack = gate();
        store.returnGates.add(firstBack);
        store.returnGates.add(secondBack);

        OutboxEvent x = committed(order("x"));
        engine.wakeFor(WakeReason.EXTERNAL, List.of(x.eventId()));
        await().atMost(SOON).until(() -> store.claims.get() == claims + 1); // worker A chose x, its answer on its way
        OutboxEvent y = committed(order("y"));
        engine.wakeFor(WakeReason.EXTERNAL, List.of(y.eventId()));
        await().atMost(SOON).until(() -> store.claims.get() == claims + 2); // idle worker B chose y meanwhile
        secondBack.countDown();
        await().atMost(SOON).until(() -> fake.row(y.eventId()).status == RowStatus.SENT);
        firstBack.countDown();
        await().atMost(SOON).until(() -> fake.count(RowStatus.SENT) == 2);
        EngineHarness.pause(300);

        assertThat(store.claims.get() - claims).as("claims for two rows of two aggregates (%d empty)",
                store.empty.get() - empty).isEqualTo(2);
    }

    /**
     * While one claim hangs (a database that stopped answering on that connection), the other worker's claims
     * overlap it, and each of its rows still costs one claim.
     */
    @Test
    void whileOneClaimHangsEachRowOfTheOtherWorkerCostsOneClaim() {
        GatedClaims store = new GatedClaims(fake);
        DeliveryEngine engine = startedWithTwoWorkers(store);
        CountDownLatch hang = gate();
        store.startGates.add(hang);
        OutboxEvent h = committed(order("h"));
        engine.wakeFor(WakeReason.EXTERNAL, List.of(h.eventId()));
        EngineHarness.pause(100); // one worker's claim hangs
        int claims = store.claims.get();
        int empty = store.empty.get();

        for (int i = 0; i < 5; i++) {
            OutboxEvent r = committed(order("r" + i));
            engine.wakeFor(WakeReason.EXTERNAL, List.of(r.eventId()));
            await().atMost(SOON).until(() -> fake.row(r.eventId()).status == RowStatus.SENT);
            EngineHarness.pause(100);
        }

        assertThat(store.claims.get() - claims).as("claims of the other worker for 5 rows, one hung claim under way"
                + " (%d empty)", store.empty.get() - empty).isEqualTo(5);
    }
}
