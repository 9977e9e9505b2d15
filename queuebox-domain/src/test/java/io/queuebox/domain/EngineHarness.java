package io.queuebox.domain;

import io.queuebox.ports.DeliveryListener;
import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.OutboxStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/** What the engine tests share: their timings and settings, and the engines they start, stopped after each test. */
final class EngineHarness {

    static final Duration SOON = Duration.ofSeconds(3);
    static final Duration LONG_INTERVAL = Duration.ofSeconds(30);
    static final RetryPolicy QUICK_RETRIES = RetryPolicy.builder().initialDelay(Duration.ofMillis(20))
            .maxDelay(Duration.ofMillis(100)).jitter(0.0).build();

    private final List<DeliveryEngine> engines = new ArrayList<>();

    /** Waits for {@code latch} at most {@code millis}: a test's gate that must not hang the engine's threads. */
    static void waitFor(java.util.concurrent.CountDownLatch latch, long millis) {
        try {
            latch.await(millis, java.util.concurrent.TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Lets {@code millis} pass (awaitility's way, so a test reads as the others). */
    static void pause(long millis) {
        org.awaitility.Awaitility.await().pollDelay(Duration.ofMillis(millis)).atMost(Duration.ofMillis(millis + 5_000))
                .until(() -> true);
    }

    /** One worker at {@code depth}: the tests count the claims of one claimer. */
    static DeliverySettings.Builder oneWorker(int depth, Duration wakeInterval) {
        return DeliverySettings.builder().workers(1).pipelineDepth(depth).wakeInterval(wakeInterval)
                .retryPolicy(QUICK_RETRIES).purgeEnabled(false).shutdownDeadline(Duration.ofSeconds(1));
    }

    /** Builds, remembers and starts an engine. */
    DeliveryEngine start(DeliveryEngine.Builder builder, OutboxStore store, MessagePublisher publisher,
                         DeliveryListener listener, DeliverySettings.Builder settings) {
        return start(builder.store(store).publisher(publisher).listener(listener).settings(settings.build()).build());
    }

    /** Remembers an engine a test starts itself, so that it is stopped after the test. */
    DeliveryEngine remember(DeliveryEngine engine) {
        engines.add(engine);
        return engine;
    }

    /** Remembers and starts an engine a test built itself. */
    DeliveryEngine start(DeliveryEngine engine) {
        engines.add(engine);
        engine.start();
        return engine;
    }

    /** Opens the publisher's gate (a test may have left it shut, so a publish would never return) and stops all. */
    void stopAll(FakePublisher publisher) {
        CountDownLatch gate = publisher.gate;
        if (gate != null) {
            gate.countDown();
        }
        engines.forEach(engine -> engine.stop(Duration.ofSeconds(2)));
    }
}
