package io.queuebox.kafka;

import io.queuebox.ports.AggregateChains;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Health;
import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.Stream;
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
 *
 * <p>One call takes at most {@code publish.timeout.ms}. Topic metadata is fetched off the calling thread
 * ({@link TopicLookups}), so a missing topic or an unreachable cluster costs one wait per call, not one
 * {@code max.block.ms} per record. A missing topic holds back only the records to it (retriable, charged,
 * named in health); Kafka being down or refusing the relay's credentials sends nothing and charges nothing
 * ({@code NotAttempted}) until a probe ({@link ClusterProbe}) gets an answer again.
 */
public final class KafkaMessagePublisher implements MessagePublisher {

    /** Header names QueueBox sets on every record. */
    public static final String HEADER_EVENT_ID = "event-id";
    public static final String HEADER_EVENT_TYPE = "event-type";
    public static final String HEADER_AGGREGATE_TYPE = "aggregate-type";
    public static final String HEADER_AGGREGATE_ID = "aggregate-id";
    public static final String HEADER_CONTENT_TYPE = "content-type";

    private static final String CE_SPECVERSION = "ce_specversion";
    private static final String CE_ID = "ce_id";
    private static final String CE_SOURCE = "ce_source";
    private static final String CE_TYPE = "ce_type";
    private static final String CE_SUBJECT = "ce_subject";
    private static final String CE_TIME = "ce_time";

    private static final Set<String> OWN_HEADERS = Set.of(HEADER_EVENT_ID, HEADER_EVENT_TYPE, HEADER_AGGREGATE_TYPE,
            HEADER_AGGREGATE_ID, HEADER_CONTENT_TYPE);
    private static final Set<String> OWN_AND_CLOUD_EVENTS_HEADERS = Stream.concat(OWN_HEADERS.stream(),
            Stream.of(CE_SPECVERSION, CE_ID, CE_SOURCE, CE_TYPE, CE_SUBJECT, CE_TIME)).collect(Collectors.toUnmodifiableSet());

    private final KafkaSettings settings;
    /** The headers this publisher sets on every record: they win over an application header of the same name. */
    private final Set<String> ownHeaders;
    private final Producer<String, byte[]> producer;
    private final KafkaHealth state = new KafkaHealth();
    private final TopicLookups lookups;
    private final ClusterProbe probe;
    private final AtomicBoolean closed = new AtomicBoolean();

    private KafkaMessagePublisher(KafkaSettings settings) {
        this.settings = settings;
        this.ownHeaders = settings.cloudEvents() ? OWN_AND_CLOUD_EVENTS_HEADERS : OWN_HEADERS;
        try {
            this.producer = new KafkaProducer<>(settings.producerProperties());
        } catch (KafkaException e) {
            throw new IllegalArgumentException("cannot create the Kafka producer: " + KafkaErrors.reason(
                    e.getCause() != null ? e.getCause() : e), e);
        }
        this.lookups = new TopicLookups(producer, settings.metadataWaitMs(), this::looked);
        this.probe = new ClusterProbe(settings.producerProperties(), settings.requestTimeoutMs(), this::probed);
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
        String outage = state.outage();
        if (outage != null) {
            // Sending now would only charge every record an attempt once it expired; the probe tells when to resume.
            probe.start();
            return batch.stream().map(delivery -> PublishOutcome.notAttempted(delivery.eventId(),
                    "not attempted: " + outage)).toList();
        }
        return new Call(batch).run();
    }

    @Override
    public Health health() {
        return state.health(System.currentTimeMillis());
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            probe.close();
            producer.close(Duration.ofSeconds(5));
            lookups.close();
        }
    }

    @Override
    public String toString() {
        return "KafkaMessagePublisher[" + settings + "]";
    }

    /** Every metadata lookup's end, whichever call (if any) still waits for it. */
    private void looked(String topic, Throwable failure) {
        if (failure == null) {
            state.topicFound(topic);
            return;
        }
        String reason = KafkaErrors.reason(failure);
        switch (KafkaErrors.kindOf(failure)) {
            case MISSING_TOPIC -> state.topicMissing(topic, reason, System.currentTimeMillis());
            case TOPIC_NOT_AUTHORIZED -> state.topicNotAuthorized(topic, reason, System.currentTimeMillis());
            case UNAVAILABLE -> state.outage("Kafka unavailable (" + reason + ")");
            case NOT_AUTHORIZED -> state.outage("Kafka refuses the relay (" + reason + ")");
            default -> {
                // Closed or interrupted: the calls waiting for it answer for themselves.
            }
        }
    }

    private void probed(Throwable failure) {
        KafkaErrors.Kind kind = failure == null ? null : KafkaErrors.kindOf(failure);
        if (kind != KafkaErrors.Kind.UNAVAILABLE && kind != KafkaErrors.Kind.NOT_AUTHORIZED) {
            // Kafka answered, or the probe itself is broken (it could not tell): either way sending decides again,
            // rather than a broken probe holding every event back for good.
            state.answered();
        }
    }

    /** What a call learnt about one topic: send to it, wait for its metadata, or answer its records at once. */
    private record Verdict(boolean ready, Function<UUID, PublishOutcome> answer) {
        static final Verdict READY = new Verdict(true, null);
        static final Verdict PENDING = new Verdict(false, null);

        static Verdict answer(Function<UUID, PublishOutcome> answer) {
            return new Verdict(false, answer);
        }
    }

    private sealed interface Signal {
    }

    /** A send ended; {@code beforeAppend}: it failed on the calling thread, before the producer took the record. */
    private record Completion(int chain, int index, Exception failure, boolean beforeAppend) implements Signal {
    }

    private record Looked(String topic, Throwable failure) implements Signal {
    }

    /** One publish call: its outcomes, its chains, and what comes back for them (acks, topic metadata). */
    private final class Call {
        private final List<ClaimedDelivery> batch;
        private final String[] topicOf;
        private final PublishOutcome[] outcomes;
        private final boolean[] sent;
        private final List<Deque<Integer>> chains;
        private final BlockingQueue<Signal> signals = new LinkedBlockingQueue<>();
        private final Map<String, Verdict> topics = new HashMap<>();
        private final Map<String, List<Integer>> waitingChains = new HashMap<>();
        private final Thread caller = Thread.currentThread();
        private final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(settings.publishTimeoutMs());
        private final long maxBlockNanos = TimeUnit.MILLISECONDS.toNanos(settings.maxBlockMs());
        private String stopped;
        private int inFlight;
        private int waiting;

        Call(List<ClaimedDelivery> batch) {
            this.batch = List.copyOf(batch);
            this.outcomes = new PublishOutcome[this.batch.size()];
            this.sent = new boolean[this.batch.size()];
            this.topicOf = new String[this.batch.size()];
            for (int i = 0; i < topicOf.length; i++) {
                topicOf[i] = settings.router().topicFor(this.batch.get(i).event());
            }
            this.chains = AggregateChains.of(this.batch);
        }

        List<PublishOutcome> run() {
            for (int chain = 0; chain < chains.size(); chain++) {
                // A send that failed on this thread (no buffer space) stops the call before the next head is
                // sent, instead of every later head waiting max.block.ms for the same full buffer.
                handleQueued();
                advance(chain);
            }
            try {
                while (inFlight + waiting > 0) {
                    long remaining = deadline - System.nanoTime();
                    Signal signal = remaining > 0 ? signals.poll(remaining, TimeUnit.NANOSECONDS) : null;
                    if (signal == null) {
                        break;
                    }
                    handle(signal);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            // Past the deadline, or interrupted: what already came back still counts. A send that failed before
            // the producer took its record is "not attempted" only once its completion is read.
            handleQueued();
            for (int i = 0; i < outcomes.length; i++) {
                if (outcomes[i] == null) {
                    outcomes[i] = unanswered(i);
                }
            }
            return Arrays.asList(outcomes);
        }

        /** Handles every signal already queued, without waiting; sends nothing once too little time is left. */
        private void handleQueued() {
            for (Signal signal = signals.poll(); signal != null; signal = signals.poll()) {
                handle(signal);
            }
        }

        private void handle(Signal signal) {
            if (signal instanceof Completion completion) {
                completed(completion);
            } else if (signal instanceof Looked looked) {
                looked(looked);
            }
        }

        /** Sends the chain's next record, parks the chain until its topic is known, or answers the chain. */
        private void advance(int chain) {
            Deque<Integer> queue = chains.get(chain);
            Integer index = queue.peek();
            if (index == null || deadline - System.nanoTime() < maxBlockNanos) {
                // send may block up to max.block.ms (buffer space, metadata): one started now could outlast the
                // deadline, so nothing more is sent; the rest is answered "not attempted".
                return;
            }
            if (stopped != null) {
                answerRest(chain, eventId -> PublishOutcome.notAttempted(eventId, "not attempted: " + stopped));
                return;
            }
            String topic = topicOf[index];
            Verdict verdict = topics.computeIfAbsent(topic, this::lookUp);
            if (verdict.ready()) {
                queue.poll();
                send(chain, index);
            } else if (verdict.answer() == null) {
                waitingChains.computeIfAbsent(topic, t -> new ArrayList<>()).add(chain);
                waiting++;
            } else {
                queue.poll();
                outcomes[index] = verdict.answer().apply(batch.get(index).eventId());
                answerRest(chain, notAttemptedAfter(index));
            }
        }

        private Verdict lookUp(String topic) {
            CompletableFuture<Void> lookup = lookups.lookup(topic);
            Optional<String> missing = state.missing(topic, System.currentTimeMillis());
            if (missing.isPresent() && !lookup.isDone()) {
                // Found missing a moment ago: answer now rather than wait max.block.ms for it again. The lookup
                // carries on, and once the topic exists the next call sends to it.
                return missingTopic(topic, missing.get());
            }
            lookup.whenComplete((ignored, failure) -> signals.add(new Looked(topic, failure)));
            return Verdict.PENDING;
        }

        private void looked(Looked looked) {
            Verdict verdict = verdictOf(looked.topic(), looked.failure());
            topics.put(looked.topic(), verdict);
            List<Integer> waitingForIt = waitingChains.remove(looked.topic());
            if (waitingForIt == null) {
                return;
            }
            waiting -= waitingForIt.size();
            for (int chain : waitingForIt) {
                advance(chain);
            }
        }

        private Verdict verdictOf(String topic, Throwable failure) {
            if (failure == null) {
                return Verdict.READY;
            }
            String reason = KafkaErrors.reason(failure);
            return switch (KafkaErrors.kindOf(failure)) {
                case MISSING_TOPIC -> missingTopic(topic, reason);
                case PERMANENT -> Verdict.answer(eventId -> PublishOutcome.permanent(eventId, reason));
                case TOPIC_NOT_AUTHORIZED -> Verdict.answer(eventId -> PublishOutcome.notAttempted(eventId,
                        "not attempted: not authorized to write to topic '" + topic + "' (" + reason + ")"));
                case UNAVAILABLE -> stop("Kafka unavailable (" + reason + ")");
                case NOT_AUTHORIZED -> stop("Kafka refuses the relay (" + reason + ")");
                case RETRIABLE -> Verdict.answer(eventId -> PublishOutcome.notAttempted(eventId,
                        "not attempted: no metadata for topic '" + topic + "' (" + reason + ")"));
            };
        }

        private Verdict missingTopic(String topic, String reason) {
            return Verdict.answer(eventId -> PublishOutcome.retriable(eventId,
                    "topic '" + topic + "' does not exist (" + reason + ")"));
        }

        /** Nothing more is sent in this call; the records waiting for metadata are answered now. */
        private Verdict stop(String reason) {
            if (stopped == null) {
                stopped = reason;
                Function<UUID, PublishOutcome> notAttempted = eventId -> PublishOutcome.notAttempted(eventId,
                        "not attempted: " + reason);
                waitingChains.values().forEach(waitingForIt -> waitingForIt.forEach(chain -> answerRest(chain,
                        notAttempted)));
                waitingChains.clear();
                waiting = 0;
            }
            return Verdict.answer(eventId -> PublishOutcome.notAttempted(eventId, "not attempted: " + reason));
        }

        private void send(int chain, int index) {
            sent[index] = true;
            inFlight++;
            try {
                producer.send(record(batch.get(index)), (metadata, failure) -> signals.add(
                        new Completion(chain, index, failure, Thread.currentThread() == caller)));
            } catch (RuntimeException e) {
                // Thrown instead of reported through the callback (closed producer, interrupt): never appended.
                signals.add(new Completion(chain, index, e, true));
            }
        }

        private void completed(Completion done) {
            inFlight--;
            int index = done.index();
            UUID eventId = batch.get(index).eventId();
            if (done.failure() == null) {
                outcomes[index] = PublishOutcome.acked(eventId);
                state.acked();
                advance(done.chain());
                return;
            }
            String reason = KafkaErrors.reason(done.failure());
            String topic = topicOf[index];
            outcomes[index] = switch (KafkaErrors.kindOf(done.failure())) {
                case PERMANENT -> PublishOutcome.permanent(eventId, reason);
                case MISSING_TOPIC -> {
                    state.topicMissing(topic, reason, System.currentTimeMillis());
                    yield missingTopic(topic, reason).answer().apply(eventId);
                }
                case TOPIC_NOT_AUTHORIZED -> {
                    // Refused, so not written: an outage of the relay for that topic, not the event's fault.
                    state.topicNotAuthorized(topic, reason, System.currentTimeMillis());
                    yield PublishOutcome.notAttempted(eventId, "not attempted: not authorized to write to topic '"
                            + topic + "' (" + reason + ")");
                }
                case NOT_AUTHORIZED -> {
                    state.outage("Kafka refuses the relay (" + reason + ")");
                    yield stop("Kafka refuses the relay (" + reason + ")").answer().apply(eventId);
                }
                case UNAVAILABLE -> {
                    // A record that expired may or may not be on the broker: in doubt, charged. The rest of the
                    // batch, and later calls until the probe gets an answer, are not sent at all.
                    state.outage("Kafka unavailable (" + reason + ")");
                    stop("Kafka unavailable (" + reason + ")");
                    yield done.beforeAppend() ? PublishOutcome.notAttempted(eventId, "not attempted: " + reason)
                            : PublishOutcome.retriable(eventId, reason);
                }
                case RETRIABLE -> done.beforeAppend() ? PublishOutcome.notAttempted(eventId, "not attempted: " + reason)
                        : PublishOutcome.retriable(eventId, reason);
            };
            answerRest(done.chain(), notAttemptedAfter(index));
        }

        private Function<UUID, PublishOutcome> notAttemptedAfter(int failed) {
            return later -> PublishOutcome.notAttempted(later,
                    "not attempted: an earlier event of aggregate " + batch.get(failed).aggregate() + " failed");
        }

        /** Answers every record left in the chain (used after a failure, or when they cannot be sent). */
        private void answerRest(int chain, Function<UUID, PublishOutcome> answer) {
            Deque<Integer> rest = chains.get(chain);
            for (Integer later = rest.poll(); later != null; later = rest.poll()) {
                outcomes[later] = answer.apply(batch.get(later).eventId());
            }
        }

        private PublishOutcome unanswered(int index) {
            UUID eventId = batch.get(index).eventId();
            if (sent[index]) {
                // Handed to the producer and not acknowledged in time: the broker may or may not have it.
                return PublishOutcome.retriable(eventId, "no acknowledgement from Kafka within publish.timeout.ms ("
                        + settings.publishTimeoutMs() + " ms)");
            }
            if (stopped != null) {
                return PublishOutcome.notAttempted(eventId, "not attempted: " + stopped);
            }
            Verdict verdict = topics.get(topicOf[index]);
            return PublishOutcome.notAttempted(eventId, "not attempted: less than max.block.ms ("
                    + settings.maxBlockMs() + " ms) of publish.timeout.ms (" + settings.publishTimeoutMs()
                    + " ms) was left to send it"
                    + (verdict == Verdict.PENDING ? ", still waiting for metadata of topic '" + topicOf[index] + "'" : ""));
        }

        private ProducerRecord<String, byte[]> record(ClaimedDelivery delivery) {
            OutboxEvent event = delivery.event();
            Headers headers = new RecordHeaders();
            // An application header named like one of QueueBox's own is left out here, not removed after: Headers.remove
            // walks every header, once per header QueueBox sets (building the headers of a record with one application
            // header took 196 ns that way, 137-145 ns this way).
            for (Map.Entry<String, String> header : event.headers().entrySet()) {
                if (!ownHeaders.contains(header.getKey())) {
                    headers.add(header.getKey(), utf8(header.getValue()));
                }
            }
            add(headers, HEADER_EVENT_ID, event.eventId().toString());
            add(headers, HEADER_EVENT_TYPE, event.eventType());
            add(headers, HEADER_AGGREGATE_TYPE, event.aggregateType());
            add(headers, HEADER_AGGREGATE_ID, event.aggregateId());
            add(headers, HEADER_CONTENT_TYPE, event.contentType());
            if (settings.cloudEvents()) {
                add(headers, CE_SPECVERSION, "1.0");
                add(headers, CE_ID, event.eventId().toString());
                add(headers, CE_SOURCE, settings.cloudEventsSource());
                add(headers, CE_TYPE, event.eventType());
                add(headers, CE_SUBJECT, event.aggregateId());
                add(headers, CE_TIME, delivery.createdAt().toString());
            }
            return new ProducerRecord<>(settings.router().topicFor(event), null, event.aggregateId(),
                    event.payload(), headers);
        }

        private void add(Headers headers, String name, String value) {
            headers.add(name, utf8(value));
        }

        private byte[] utf8(String value) {
            return value.getBytes(StandardCharsets.UTF_8);
        }
    }
}
