package io.queuebox.kafka;

import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Health;
import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * Publishes outbox events to Kafka: key = aggregate id, value = payload, QueueBox's headers plus the
 * event's own. Messages of different aggregates are in flight together; the next message of an aggregate
 * is sent only once the previous one was acknowledged, so a failure stops its aggregate before anything
 * later of it reaches the broker.
 */
public final class KafkaMessagePublisher implements MessagePublisher {

    /** Header names QueueBox sets on every record. */
    public static final String HEADER_EVENT_ID = "event-id";
    public static final String HEADER_EVENT_TYPE = "event-type";
    public static final String HEADER_AGGREGATE_TYPE = "aggregate-type";
    public static final String HEADER_AGGREGATE_ID = "aggregate-id";
    public static final String HEADER_CONTENT_TYPE = "content-type";

    // Beyond the producer's own bounds (max.block + delivery.timeout) the call gives up waiting anyway.
    private static final long WAIT_MARGIN_MS = 5_000;

    private final KafkaSettings settings;
    private final Producer<String, byte[]> producer;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicReference<Health> health = new AtomicReference<>(Health.up("no message sent yet"));

    private KafkaMessagePublisher(KafkaSettings settings) {
        this.settings = settings;
        try {
            this.producer = new KafkaProducer<>(settings.producerProperties());
        } catch (KafkaException e) {
            throw new IllegalArgumentException("cannot create the Kafka producer: " + KafkaErrors.reason(
                    e.getCause() != null ? e.getCause() : e), e);
        }
    }

    /** A publisher with its own producer. No connection is made until the first publish. */
    public static KafkaMessagePublisher create(KafkaSettings settings) {
        return new KafkaMessagePublisher(Objects.requireNonNull(settings, "settings"));
    }

    @Override
    public List<PublishOutcome> publish(List<ClaimedDelivery> batch) {
        if (closed.get()) {
            throw new IllegalStateException("the Kafka publisher is closed");
        }
        return new Call(batch).run();
    }

    @Override
    public Health health() {
        return health.get();
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            producer.close(Duration.ofSeconds(5));
        }
    }

    @Override
    public String toString() {
        return "KafkaMessagePublisher[" + settings + "]";
    }

    private record Completion(int chain, int index, Exception failure) {
    }

    /** One publish call: its outcomes, its chains and the acks that come back for them. */
    private final class Call {
        private final List<ClaimedDelivery> batch;
        private final PublishOutcome[] outcomes;
        private final List<Deque<Integer>> chains;
        private final BlockingQueue<Completion> completions = new LinkedBlockingQueue<>();
        private String unavailable;
        private int inFlight;

        Call(List<ClaimedDelivery> batch) {
            this.batch = List.copyOf(batch);
            this.outcomes = new PublishOutcome[this.batch.size()];
            this.chains = AggregateChains.of(this.batch);
        }

        List<PublishOutcome> run() {
            long deadline = System.nanoTime()
                    + TimeUnit.MILLISECONDS.toNanos(settings.maxBlockMs() + settings.deliveryTimeoutMs() + WAIT_MARGIN_MS);
            for (int chain = 0; chain < chains.size(); chain++) {
                sendNext(chain);
            }
            try {
                while (inFlight > 0) {
                    Completion done = completions.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
                    if (done == null) {
                        break;
                    }
                    inFlight--;
                    if (done.failure() == null) {
                        outcomes[done.index()] = PublishOutcome.acked(batch.get(done.index()).eventId());
                        health.set(Health.up("last send acknowledged"));
                        sendNext(done.chain());
                    } else {
                        fail(done.chain(), done.index(), done.failure());
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            for (int i = 0; i < outcomes.length; i++) {
                if (outcomes[i] == null) {
                    // Sent but unanswered (deadline or interrupt), or never sent: the broker may or may not have it.
                    outcomes[i] = PublishOutcome.retriable(batch.get(i).eventId(),
                            "no acknowledgement from Kafka within the publish deadline");
                }
            }
            return Arrays.asList(outcomes);
        }

        private void sendNext(int chain) {
            Integer index = chains.get(chain).poll();
            if (index == null) {
                return;
            }
            if (unavailable != null) {
                outcomes[index] = PublishOutcome.retriable(batch.get(index).eventId(),
                        "not attempted: Kafka unavailable in this call (" + unavailable + ")");
                failRest(chain);
                return;
            }
            inFlight++;
            try {
                producer.send(record(batch.get(index)), (metadata, failure) ->
                        completions.add(new Completion(chain, index, failure)));
            } catch (RuntimeException e) {
                // Thrown instead of reported through the callback (serialization, closed producer, interrupt).
                completions.add(new Completion(chain, index, e));
            }
        }

        private void fail(int chain, int index, Exception failure) {
            PublishOutcome outcome = KafkaErrors.classify(batch.get(index).eventId(), failure);
            outcomes[index] = outcome;
            if (KafkaErrors.isTimeout(failure)) {
                // A timeout already cost max.block or delivery.timeout: starting more sends in this call would
                // only multiply the wait, so the rest of the batch is answered retriable at once.
                unavailable = KafkaErrors.reason(failure);
                health.set(Health.down("Kafka unavailable: " + unavailable));
            }
            failRest(chain);
        }

        private void failRest(int chain) {
            Deque<Integer> rest = chains.get(chain);
            for (Integer later = rest.poll(); later != null; later = rest.poll()) {
                outcomes[later] = PublishOutcome.retriable(batch.get(later).eventId(),
                        "not attempted: an earlier event of aggregate " + batch.get(later).aggregate() + " failed");
            }
        }

        private ProducerRecord<String, byte[]> record(ClaimedDelivery delivery) {
            OutboxEvent event = delivery.event();
            Headers headers = new RecordHeaders();
            for (Map.Entry<String, String> header : event.headers().entrySet()) {
                headers.add(header.getKey(), utf8(header.getValue()));
            }
            put(headers, HEADER_EVENT_ID, event.eventId().toString());
            put(headers, HEADER_EVENT_TYPE, event.eventType());
            put(headers, HEADER_AGGREGATE_TYPE, event.aggregateType());
            put(headers, HEADER_AGGREGATE_ID, event.aggregateId());
            put(headers, HEADER_CONTENT_TYPE, event.contentType());
            if (settings.cloudEvents()) {
                put(headers, "ce_specversion", "1.0");
                put(headers, "ce_id", event.eventId().toString());
                put(headers, "ce_source", settings.cloudEventsSource());
                put(headers, "ce_type", event.eventType());
                put(headers, "ce_subject", event.aggregateId());
                put(headers, "ce_time", delivery.createdAt().toString());
            }
            return new ProducerRecord<>(settings.router().topicFor(event), null, event.aggregateId(),
                    event.payload(), headers);
        }

        private void put(Headers headers, String name, String value) {
            // QueueBox's own headers win over an application header of the same name.
            headers.remove(name);
            headers.add(name, utf8(value));
        }

        private byte[] utf8(String value) {
            return value.getBytes(StandardCharsets.UTF_8);
        }
    }
}
