package io.queuebox.domain;

import static io.queuebox.domain.Fixtures.anEventFor;
import static io.queuebox.domain.Fixtures.order;
import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.PublishOutcome;
import java.time.Clock;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A broker outage with a backlog costs about one publish per error pause, whatever the number of workers and the
 * pipeline depth (a review of 2026-12-05 found two and three per pause at depth 2 with two and three workers).
 */
class DeliveryEngineOutageCostTest {

    private final FakeOutboxStore store = new FakeOutboxStore(Clock.systemUTC());
    private final FakePublisher publisher = new FakePublisher();
    private final RecordingListener listener = new RecordingListener();
    private final EngineHarness engines = new EngineHarness();

    @AfterEach
    void stopEngines() {
        engines.stopAll(publisher);
    }

    /**
     * Every batch full (batches of one, 40 due rows) and a broker that answers not attempted. Serial, peers give way
     * to worker 1 after a failure. Pipelined, worker 1's full batches woke a peer into the outage when handed (a serial
     * batch is full only once published), and a peer whose pauses ran in step with worker 1's claimed in the moment
     * between worker 1's pause and its claim.
     */
    @ParameterizedTest(name = "workers {0}, depth {1}")
    @CsvSource({"2,1", "3,1", "2,2", "3,2", "2,3"})
    void aBrokerOutageWithABacklogCostsAboutOnePublishPerErrorPause(int workers, int depth) {
        Duration errorPause = Duration.ofMillis(200); // the wake interval, under a second
        for (int i = 0; i < 40; i++) {
            store.add(anEventFor(order("o" + i)));
        }
        publisher.answer = d -> PublishOutcome.notAttempted(d.eventId(), "broker down");
        engines.start(DeliveryEngine.builder(), store, publisher, listener,
                DeliverySettings.builder().workers(workers).pipelineDepth(depth).batchSize(1).wakeInterval(errorPause)
                        .retryPolicy(EngineHarness.QUICK_RETRIES).purgeEnabled(false)
                        .shutdownDeadline(Duration.ofSeconds(1)));
        EngineHarness.pause(1_000);

        int before = publisher.calls.get();
        long start = System.nanoTime();
        EngineHarness.pause(3_000);
        int calls = publisher.calls.get() - before;
        double pauses = (System.nanoTime() - start) / (double) errorPause.toNanos();
        assertThat((double) calls).as("publishes in %.0f error pauses (threads %s)", pauses, publisher.threads)
                .isLessThan(1.4 * pauses);
    }
}
