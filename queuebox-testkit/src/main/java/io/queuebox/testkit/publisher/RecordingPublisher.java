package io.queuebox.testkit.publisher;

import io.queuebox.ports.AggregateRef;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Health;
import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;

/**
 * A broker in memory: acks every message unless a test scripted otherwise, and records, in order, every
 * message it acked. It keeps the {@link MessagePublisher} contract (it passes
 * {@code MessagePublisherContract}): one outcome per delivery in input order, and once a message of an
 * aggregate fails, the later ones of that aggregate in the same call are answered "not attempted" and are
 * not recorded.
 *
 * <pre>{@code
 * RecordingPublisher broker = RecordingPublisher.acking();
 * broker.on(poison.eventId()).failPermanently("record too large");
 * broker.on(flaky.eventId()).times(2).failRetriably("broker timeout");   // then acked
 * broker.when(d -> d.aggregate().id().equals("order-7")).delayBy(Duration.ofMillis(50)).ack();
 * broker.failRandomly(0.2, new Random(42));                              // for end-to-end tests
 * }</pre>
 *
 * <p>Scripts are tried newest first; a script limited by {@link Script#times(int)} stops matching once used
 * up. Thread-safe: scripts may be added while the engine publishes.
 */
public final class RecordingPublisher implements MessagePublisher {

    private final Deque<Rule> rules = new ConcurrentLinkedDeque<>();
    private final List<ClaimedDelivery> delivered = new ArrayList<>();
    private final List<ClaimedDelivery> attempted = new ArrayList<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile Health health = Health.up("recording publisher");

    private RecordingPublisher() {
    }

    /** A publisher that acks everything until scripted otherwise. */
    public static RecordingPublisher acking() {
        return new RecordingPublisher();
    }

    // --------------------------------------------------------------------------------------- scripting

    /** Scripts what happens to the message of one event. */
    public Script on(UUID eventId) {
        Objects.requireNonNull(eventId, "eventId");
        return when(delivery -> delivery.eventId().equals(eventId));
    }

    /** Scripts what happens to every message matching {@code condition}. */
    public Script when(Predicate<ClaimedDelivery> condition) {
        return new Script(Objects.requireNonNull(condition, "condition"));
    }

    /**
     * Fails each message retriably with probability {@code probability}, drawn from {@code random} (seed it to
     * make a failing run reproducible). Applies below every other script.
     */
    public RecordingPublisher failRandomly(double probability, Random random) {
        if (!(probability >= 0 && probability <= 1)) {
            throw new IllegalArgumentException("probability must be between 0 and 1, got: " + probability);
        }
        Objects.requireNonNull(random, "random");
        Reaction failure = Reaction.retriable("random failure (p=" + probability + ")");
        rules.addLast(new Rule(delivery -> {
            synchronized (random) {
                return random.nextDouble() < probability;
            }
        }, failure, Duration.ZERO, new AtomicInteger(Integer.MAX_VALUE)));
        return this;
    }

    /** Forgets every script: from now on every message is acked. */
    public void resetScripts() {
        rules.clear();
    }

    /** What {@link #health()} answers from now on. */
    public void reportHealth(Health newHealth) {
        this.health = Objects.requireNonNull(newHealth, "health");
    }

    // --------------------------------------------------------------------------------------- publishing

    @Override
    public List<PublishOutcome> publish(List<ClaimedDelivery> batch) {
        Objects.requireNonNull(batch, "batch");
        requireOpen();
        Map<AggregateRef, UUID> failedAggregates = new HashMap<>();
        List<PublishOutcome> outcomes = new ArrayList<>(batch.size());
        for (ClaimedDelivery delivery : batch) {
            UUID failedBefore = failedAggregates.get(delivery.aggregate());
            if (failedBefore != null) {
                outcomes.add(PublishOutcome.notAttempted(delivery.eventId(),
                        "not attempted: an earlier event of aggregate " + delivery.aggregate() + " failed"));
                continue;
            }
            PublishOutcome outcome = attempt(delivery);
            if (!outcome.isAcked()) {
                failedAggregates.put(delivery.aggregate(), delivery.eventId());
            }
            outcomes.add(outcome);
        }
        return List.copyOf(outcomes);
    }

    @Override
    public Health health() {
        return closed.get() ? Health.down("closed") : health;
    }

    @Override
    public void close() {
        closed.set(true);
    }

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        return closed.get();
    }

    // --------------------------------------------------------------------------------------- records

    /** Every delivery this broker acked, in the order it acked them. */
    public List<ClaimedDelivery> deliveries() {
        synchronized (delivered) {
            return List.copyOf(delivered);
        }
    }

    /** The events this broker acked, in order (a redelivered event appears once per ack). */
    public List<OutboxEvent> delivered() {
        return deliveries().stream().map(ClaimedDelivery::event).toList();
    }

    /** The ids of the events this broker acked, in order. */
    public List<UUID> deliveredIds() {
        return deliveries().stream().map(ClaimedDelivery::eventId).toList();
    }

    /** The events of one aggregate this broker acked, in order. */
    public List<OutboxEvent> deliveredFor(AggregateRef aggregate) {
        return delivered().stream().filter(event -> event.aggregate().equals(aggregate)).toList();
    }

    /** How many messages this broker acked. */
    public int deliveredCount() {
        synchronized (delivered) {
            return delivered.size();
        }
    }

    /** The acked messages as a consumer reads them back. */
    public List<ReceivedMessage> received() {
        return delivered().stream().map(ReceivedMessage::asPublished).toList();
    }

    /**
     * Every delivery a script or the default answered, in order: acked, failed, or scripted with
     * {@link Script#skip}. The later messages of an aggregate that failed earlier in the same call are not
     * included: this publisher never looked at them.
     */
    public List<ClaimedDelivery> attempts() {
        synchronized (attempted) {
            return List.copyOf(attempted);
        }
    }

    // --------------------------------------------------------------------------------------- internals

    private PublishOutcome attempt(ClaimedDelivery delivery) {
        synchronized (attempted) {
            attempted.add(delivery);
        }
        Reaction reaction = Reaction.ACK;
        Duration delay = Duration.ZERO;
        for (Rule rule : rules) {
            if (rule.condition.test(delivery) && rule.use()) {
                reaction = rule.reaction;
                delay = rule.delay;
                break;
            }
        }
        if (!delay.isZero()) {
            try {
                Thread.sleep(delay.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return PublishOutcome.retriable(delivery.eventId(), "interrupted while waiting for the broker");
            }
        }
        return switch (reaction.kind) {
            case ACK -> {
                synchronized (delivered) {
                    delivered.add(delivery);
                }
                yield PublishOutcome.acked(delivery.eventId());
            }
            case RETRIABLE -> PublishOutcome.retriable(delivery.eventId(), reaction.reason);
            case PERMANENT -> PublishOutcome.permanent(delivery.eventId(), reaction.reason);
            case NOT_ATTEMPTED -> PublishOutcome.notAttempted(delivery.eventId(), reaction.reason);
        };
    }

    private void requireOpen() {
        if (closed.get()) {
            throw new IllegalStateException("publisher is closed");
        }
    }

    private record Reaction(Kind kind, String reason) {
        enum Kind { ACK, RETRIABLE, PERMANENT, NOT_ATTEMPTED }

        static final Reaction ACK = new Reaction(Kind.ACK, "");

        static Reaction retriable(String reason) {
            return new Reaction(Kind.RETRIABLE, Objects.requireNonNull(reason, "reason"));
        }

        static Reaction permanent(String reason) {
            return new Reaction(Kind.PERMANENT, Objects.requireNonNull(reason, "reason"));
        }

        static Reaction notAttempted(String reason) {
            return new Reaction(Kind.NOT_ATTEMPTED, Objects.requireNonNull(reason, "reason"));
        }
    }

    private record Rule(Predicate<ClaimedDelivery> condition, Reaction reaction, Duration delay,
                        AtomicInteger remaining) {
        boolean use() {
            return remaining.getAndUpdate(n -> n > 0 && n != Integer.MAX_VALUE ? n - 1 : n) > 0;
        }
    }

    /** What happens to the matching messages; ends with one of {@link #ack()}, {@link #failRetriably}, {@link #failPermanently}, {@link #skip}. */
    public final class Script {
        private final Predicate<ClaimedDelivery> condition;
        private int times = Integer.MAX_VALUE;
        private Duration delay = Duration.ZERO;

        private Script(Predicate<ClaimedDelivery> condition) {
            this.condition = condition;
        }

        /** Applies to the first {@code count} matching messages only; later ones fall through to older scripts. */
        public Script times(int count) {
            if (count < 1) {
                throw new IllegalArgumentException("times must be >= 1, got: " + count);
            }
            this.times = count;
            return this;
        }

        /** Answers each matching message only after {@code duration}, like a slow broker. */
        public Script delayBy(Duration duration) {
            Objects.requireNonNull(duration, "duration");
            if (duration.isNegative()) {
                throw new IllegalArgumentException("delay must not be negative, got: " + duration);
            }
            this.delay = duration;
            return this;
        }

        public RecordingPublisher ack() {
            return add(Reaction.ACK);
        }

        public RecordingPublisher failRetriably(String reason) {
            return add(Reaction.retriable(reason));
        }

        public RecordingPublisher failPermanently(String reason) {
            return add(Reaction.permanent(reason));
        }

        /** Answers {@link PublishOutcome.NotAttempted}, as a publisher does while its broker is down. */
        public RecordingPublisher skip(String reason) {
            return add(Reaction.notAttempted(reason));
        }

        private RecordingPublisher add(Reaction reaction) {
            rules.addFirst(new Rule(condition, reaction, delay, new AtomicInteger(times)));
            return RecordingPublisher.this;
        }
    }
}
