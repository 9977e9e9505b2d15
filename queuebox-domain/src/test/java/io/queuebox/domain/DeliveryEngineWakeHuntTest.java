package io.queuebox.domain;

import static io.queuebox.domain.Fixtures.anEventFor;
import static io.queuebox.domain.Fixtures.order;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.AggregateRef;
import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.ports.WakeReason;
import io.queuebox.ports.WakeSource;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A row named by capture, claimable once its earlier sibling (in a batch in flight) is sent, that no claim takes:
 * it waits for the wake interval. Two claims of the engine run at the same time, as two PostgreSQL claims
 * ({@code FOR UPDATE SKIP LOCKED}) do when both workers claim again after their batches: the first locks a1 and
 * skips a2, which the second has locked; the second skips a1 (locked by the first) and leaves out a2, since a
 * later row is never claimed while a concurrent claimer holds its earlier sibling ({@code gaps}/{@code claimable}
 * in OutboxSql). Both looked at the table after a2's wake-up, so neither worker looks again for it: the one whose
 * batch holds a2 back came back short and saw no news since its claim started.
 */
class DeliveryEngineWakeHuntTest {

    private static final Duration SOON = EngineHarness.SOON;

    private final FakeOutboxStore fake = new FakeOutboxStore(Clock.systemUTC());
    private final FakePublisher publisher = new FakePublisher();
    private final RecordingListener listener = new RecordingListener();
    private final EngineHarness engines = new EngineHarness();
    private final Map<UUID, CountDownLatch> publishGates = new ConcurrentHashMap<>();

    @AfterEach
    void stopEngines() {
        publishGates.values().forEach(CountDownLatch::countDown);
        engines.stopAll(publisher);
    }

    /**
     * Once armed, the next two claims run at the same time: the first does not take {@code lockedByTheOther}
     * (the second claim holds its row lock while the first walks past it), and returns only once the second claim
     * has started; the second finds the row held back by the first one's lease on its earlier sibling.
     */
    private static final class ConcurrentClaims extends ForwardingOutboxStore {
        private final FakeOutboxStore fake;
        volatile UUID lockedByTheOther;
        final AtomicInteger sinceArmed = new AtomicInteger(-1);
        final CountDownLatch secondStarted = new CountDownLatch(1);
        final CountDownLatch thirdReturned = new CountDownLatch(1);

        ConcurrentClaims(FakeOutboxStore fake) {
            super(fake);
            this.fake = fake;
        }

        void arm(UUID row) {
            lockedByTheOther = row;
            sinceArmed.set(0);
        }

        @Override
        public ClaimBatch claim(ClaimRequest request) {
            int n = sinceArmed.get() < 0 ? -1 : sinceArmed.incrementAndGet();
            if (n == 1) {
                UUID locked = lockedByTheOther;
                fake.stealLease(locked, Duration.ofMinutes(1)); // the other claim's row lock
                ClaimBatch batch = super.claim(request);
                synchronized (fake) { // the other claim left the row out: its lock is gone, the row untouched
                    FakeOutboxStore.Row row = fake.row(locked);
                    row.lease = null;
                    row.leaseUntil = null;
                }
                EngineHarness.waitFor(secondStarted, 2_000);
                return batch;
            }
            if (n == 2) {
                secondStarted.countDown();
            }
            ClaimBatch batch = super.claim(request);
            if (n == 3) {
                thirdReturned.countDown();
            }
            return batch;
        }
    }

    private OutboxEvent committed(AggregateRef aggregate) {
        OutboxEvent event = anEventFor(aggregate);
        fake.add(event);
        return event;
    }

    @ParameterizedTest(name = "pipelineDepth {0}")
    @ValueSource(ints = {1, 2})
    void aRowLeftOutByTwoClaimsAtOnceIsClaimedOnceItsSiblingIsSent(int pipelineDepth) {
        ConcurrentClaims store = new ConcurrentClaims(fake);
        HandingWakeSource source = new HandingWakeSource();
        publisher.answer = delivery -> {
            CountDownLatch gate = publishGates.get(delivery.eventId());
            if (gate != null) {
                EngineHarness.waitFor(gate, 2_000);
            }
            return PublishOutcome.acked(delivery.eventId());
        };
        engines.start(DeliveryEngine.builder().wakeSource(source), store, publisher, listener,
                EngineHarness.oneWorker(pipelineDepth, Duration.ofSeconds(60)).workers(2).batchSize(500)
                        .ordering(Ordering.PER_AGGREGATE));
        await().atMost(SOON).until(() -> fake.claimCalls.get() >= 2 && source.listener.get() != null);
        EngineHarness.pause(200);
        WakeSource.WakeListener capture = source.listener.get();

        // Both workers busy publishing a batch of their own.
        OutboxEvent p = committed(order("p"));
        publishGates.put(p.eventId(), new CountDownLatch(1));
        capture.wakeFor(WakeReason.CAPTURE, p.eventId());
        await().atMost(SOON).until(() -> publisher.calls.get() == 1);
        OutboxEvent q = committed(order("q"));
        publishGates.put(q.eventId(), new CountDownLatch(1));
        capture.wakeFor(WakeReason.CAPTURE, q.eventId());
        await().atMost(SOON).until(() -> publisher.calls.get() == 2);

        // a1 and a2 of one aggregate commit and are named meanwhile: no claim is under way, both wake the engine.
        AggregateRef a = order("a");
        OutboxEvent a1 = committed(a);
        OutboxEvent a2 = committed(a);
        capture.wakeFor(WakeReason.CAPTURE, a1.eventId());
        capture.wakeFor(WakeReason.CAPTURE, a2.eventId());

        // Both batches come back: each worker looks again for the rows named meanwhile, at the same time. a1's
        // publish waits until the worker whose claim came back empty has also taken the pending wake-up ticket.
        store.arm(a2.eventId());
        publishGates.put(a1.eventId(), store.thirdReturned);
        publishGates.get(p.eventId()).countDown();
        publishGates.get(q.eventId()).countDown();

        await().atMost(SOON).until(() -> fake.row(a1.eventId()).status == RowStatus.SENT);
        await().atMost(Duration.ofSeconds(2)).untilAsserted(() -> assertThat(fake.row(a2.eventId()).status)
                .as("a2, claimable since a1 was sent, with a 60 s wake interval (claim sizes since start %s, wakes %s)",
                        fake.claimSizes, listener.wakes)
                .isEqualTo(RowStatus.SENT));
        assertThat(fake.sentOrder).containsSubsequence(a1.eventId(), a2.eventId());
    }
}
