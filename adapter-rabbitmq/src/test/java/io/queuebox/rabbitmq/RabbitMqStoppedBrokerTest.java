package io.queuebox.rabbitmq;

import static io.queuebox.testkit.fixtures.OutboxFixtures.claimedDeliveriesOf;
import static io.queuebox.testkit.fixtures.OutboxFixtures.interleavedEvents;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.PublishOutcome;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * RabbitMQ stopped under load ({@code rabbitmqctl stop_app}, started again in a finally, about 10 s): only
 * what was in flight when the connection dropped is in doubt; every call while the broker is away is
 * answered "not attempted" (no attempt charged), and delivery resumes within seconds of its return.
 */
class RabbitMqStoppedBrokerTest {

    private static final Duration OUTAGE = Duration.ofSeconds(10);

    private final RabbitMqTestBroker broker = RabbitMqTestBroker.surviving("#");

    @AfterEach
    void removeTheTopology() {
        broker.close();
    }

    /** One publish call: when it started and ended, and what it answered. */
    private record Call(long startedAt, long endedAt, List<PublishOutcome> outcomes) {
        boolean acked() {
            return outcomes.stream().allMatch(PublishOutcome::isAcked);
        }
    }

    @Test
    void whileTheBrokerIsStoppedNothingIsChargedAndDeliveryResumesWithinSecondsOfItsReturn() throws Exception {
        List<Call> calls = new CopyOnWriteArrayList<>();
        AtomicBoolean loading = new AtomicBoolean(true);
        long stopping;
        long stopped;
        long starting;
        long started;
        try (RabbitMqMessagePublisher publisher = RabbitMqMessagePublisher.create(broker.settings()
                .set("recovery.interval.ms", "1000").set("confirm.timeout.ms", "3000").build())) {
            CompletableFuture<Void> load = CompletableFuture.runAsync(() -> {
                while (loading.get()) {
                    long start = System.nanoTime();
                    List<PublishOutcome> outcomes = publisher.publish(claimedDeliveriesOf(interleavedEvents(8, 10)));
                    calls.add(new Call(start, System.nanoTime(), outcomes));
                    if (outcomes.stream().noneMatch(PublishOutcome::isAcked)) {
                        // As the engine does after a batch that looks like an outage, rather than spin.
                        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(200));
                    }
                }
            });
            broker.awaitDeliveries(400, Duration.ofSeconds(20));
            stopping = System.nanoTime();
            try {
                RabbitMqCtl.run("stop_app");
                stopped = System.nanoTime();
                await().pollDelay(OUTAGE).atMost(OUTAGE.plusSeconds(1)).until(() -> true);
            } finally {
                starting = System.nanoTime();
                RabbitMqCtl.run("start_app");
            }
            started = System.nanoTime();
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50)).until(() -> calls.stream()
                    .anyMatch(call -> call.startedAt() > started && call.acked()));
            loading.set(false);
            load.get(30, TimeUnit.SECONDS);
        }

        List<Call> duringTheOutage = calls.stream().filter(call -> call.endedAt() > stopping && call.startedAt() < started)
                .toList();
        long retriable = count(duringTheOutage, PublishOutcome.RetriableFailure.class);
        long notAttempted = count(duringTheOutage, PublishOutcome.NotAttempted.class);
        long resumedMs = TimeUnit.NANOSECONDS.toMillis(calls.stream().filter(call -> call.startedAt() > started
                && call.acked()).findFirst().orElseThrow().endedAt() - started);
        System.out.printf("RabbitMQ stopped %d s under load: %d calls, %d outcomes retriable (in doubt), %d not"
                + " attempted, 0 parked; delivery resumed %d ms after start_app returned%n", OUTAGE.toSeconds(),
                duringTheOutage.size(), retriable, notAttempted, resumedMs);

        // While start_app runs the broker comes back piece by piece: only calls that began and ended while it was
        // fully away are sure to reach nothing.
        assertThat(duringTheOutage.stream().filter(call -> call.startedAt() > stopped && call.endedAt() < starting))
                .as("every call while the broker is away sends nothing and charges nothing")
                .isNotEmpty()
                .allSatisfy(call -> assertThat(call.outcomes()).allSatisfy(outcome -> assertThat(outcome)
                        .isInstanceOf(PublishOutcome.NotAttempted.class)));
        assertThat(duringTheOutage.stream().filter(call -> call.endedAt() < starting && call.outcomes().stream()
                .anyMatch(o -> o instanceof PublishOutcome.RetriableFailure)))
                .as("only the call in flight when the connection dropped has messages in doubt").hasSizeLessThanOrEqualTo(1);
        assertThat(duringTheOutage).flatMap(Call::outcomes).noneMatch(o -> o instanceof PublishOutcome.PermanentFailure);
        assertThat(resumedMs).as("delivery resumes within seconds of the broker's return").isLessThan(10_000);
    }

    private static long count(List<Call> calls, Class<?> kind) {
        return calls.stream().flatMap(call -> call.outcomes().stream()).filter(kind::isInstance).count();
    }
}
