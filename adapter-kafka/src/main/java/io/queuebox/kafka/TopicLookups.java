package io.queuebox.kafka;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.errors.TimeoutException;

/**
 * Topic metadata fetched off the publishing thread. {@code send} blocks the caller up to {@code max.block.ms}
 * for a topic without metadata, one record after the other; fetched here instead, a publish call waits for
 * all its topics at once and stops waiting at its own deadline. One lookup per topic runs at a time, however
 * many calls ask; a cached topic answers in microseconds.
 */
final class TopicLookups implements AutoCloseable {

    private final Producer<?, ?> producer;
    private final long waitMs;
    private final BiConsumer<String, Throwable> onResult;
    private final Map<String, CompletableFuture<Void>> lookups = new ConcurrentHashMap<>();
    // Threads only while lookups wait; at most one per distinct topic being looked up.
    private final ExecutorService threads = new ThreadPoolExecutor(0, Integer.MAX_VALUE, 30, TimeUnit.SECONDS,
            new SynchronousQueue<>(), runnable -> {
                Thread thread = new Thread(runnable, "queuebox-kafka-metadata");
                thread.setDaemon(true);
                return thread;
            });

    /**
     * {@code onResult} hears every lookup's end (null failure: the topic's metadata is there); {@code waitMs}: how
     * long a lookup waits for metadata that nobody answers.
     */
    TopicLookups(Producer<?, ?> producer, long waitMs, BiConsumer<String, Throwable> onResult) {
        this.producer = producer;
        this.waitMs = waitMs;
        this.onResult = onResult;
    }

    /** The running lookup of the topic, or a new one; completes exceptionally with the producer's failure. */
    CompletableFuture<Void> lookup(String topic) {
        return lookups.compute(topic, (t, running) -> running != null && !running.isDone() ? running : start(t));
    }

    private CompletableFuture<Void> start(String topic) {
        CompletableFuture<Void> lookup;
        try {
            lookup = CompletableFuture.runAsync(() -> waitForMetadata(topic), threads);
        } catch (RejectedExecutionException e) {
            return CompletableFuture.failedFuture(new IllegalStateException("the Kafka publisher is closed"));
        }
        lookup.whenComplete((ignored, failure) -> onResult.accept(topic, failure));
        return lookup;
    }

    /**
     * The producer's {@code max.block.ms} is capped for the sake of {@code send} (see {@link KafkaSettings#maxBlockMs()});
     * a lookup keeps asking until the configured wait is over, so a slow cluster is not taken for a dead one.
     */
    private void waitForMetadata(String topic) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMs);
        while (true) {
            try {
                producer.partitionsFor(topic);
                return;
            } catch (TimeoutException e) {
                // Without a cause nobody answered; with one (the topic is missing) the broker did: report at once.
                if (e.getCause() != null || System.nanoTime() >= deadline || Thread.currentThread().isInterrupted()) {
                    throw e;
                }
            }
        }
    }

    @Override
    public void close() {
        threads.shutdownNow();
    }
}
