package io.queuebox.testkit.publisher;

import static io.queuebox.testkit.fixtures.OutboxFixtures.anAggregateId;
import static io.queuebox.testkit.fixtures.OutboxFixtures.anEvent;
import static io.queuebox.testkit.fixtures.OutboxFixtures.claimedDeliveriesOf;
import static io.queuebox.testkit.fixtures.OutboxFixtures.eventsFor;
import static io.queuebox.testkit.fixtures.OutboxFixtures.interleavedEvents;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The behaviour every {@link MessagePublisher} must show, as one suite of scenarios against the real
 * broker. Extend it once per adapter, with the broker in the class name
 * ({@code KafkaMessagePublisherTest extends MessagePublisherContract}), and implement the hooks:
 *
 * <ul>
 *   <li>{@link #newPublisher()}: called before every test; a publisher routing to a destination (topic,
 *       exchange and queue) of its own, which {@link #awaitReceived} reads;</li>
 *   <li>{@link #newPublisherForUnreachableBroker()}: a publisher whose broker address is a closed port;</li>
 *   <li>{@link #awaitReceived(int, Duration)}: what a consumer of that destination has received since the
 *       test began;</li>
 *   <li>{@link #poisonOf(OutboxEvent)}: a variant of an event that the broker rejects for good (too large for
 *       Kafka, unroutable for RabbitMQ, scripted for a fake).</li>
 * </ul>
 *
 * and, where the defaults do not fit:
 *
 * <ul>
 *   <li>{@link #publishTimeout()}: the publish-call bound the unreachable broker's publisher is configured
 *       with (default {@link #UNREACHABLE_TIMEOUT});</li>
 *   <li>{@link #missingDestinationOf(OutboxEvent)}: a variant of an event addressed to a destination the broker
 *       does not have (a missing topic, a missing exchange); default {@link #poisonOf}.</li>
 * </ul>
 *
 * The contract closes every publisher it obtained after each test. A subclass may add its own
 * {@code @Test}s; the contract's own are {@code final}.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
public abstract class MessagePublisherContract {

    /** How long a scenario waits for the consumer to see the messages it expects. */
    protected static final Duration RECEIVE_TIMEOUT = Duration.ofSeconds(20);
    /** The default of {@link #publishTimeout()}: how long an unreachable broker may take to be answered. */
    protected static final Duration UNREACHABLE_TIMEOUT = Duration.ofSeconds(30);
    /** What a publish call may take beyond {@link #publishTimeout()}: thread hand-offs, a slow test machine. */
    protected static final Duration PUBLISH_TIMEOUT_SLACK = Duration.ofSeconds(1);

    private final List<MessagePublisher> opened = new ArrayList<>();
    private MessagePublisher publisher;

    /**
     * Answers a publisher to the broker under test, routing to a destination of this test only. Called once
     * before each test.
     */
    protected abstract MessagePublisher newPublisher() throws Exception;

    /** Answers a publisher configured for a broker that cannot be reached (for example a closed local port). */
    protected abstract MessagePublisher newPublisherForUnreachableBroker() throws Exception;

    /**
     * Waits until a consumer of the test's destination has received at least {@code count} messages, or
     * {@code timeout} passed, and returns every message received since the test began, in arrival order.
     * Returns what arrived (possibly fewer) on timeout, so the failing assertion shows it.
     */
    protected abstract List<ReceivedMessage> awaitReceived(int count, Duration timeout);

    /**
     * A variant of {@code event}, with the same event id, aggregate and position, that the broker rejects
     * permanently: the publisher must answer {@link PublishOutcome.PermanentFailure} for it.
     */
    protected abstract OutboxEvent poisonOf(OutboxEvent event);

    /**
     * The bound on one publish call that the publisher of {@link #newPublisherForUnreachableBroker()} is
     * configured with (the adapter's publish timeout). Override it with the configured value; the default,
     * {@link #UNREACHABLE_TIMEOUT}, only proves that the call does not hang.
     */
    protected Duration publishTimeout() {
        return UNREACHABLE_TIMEOUT;
    }

    /**
     * A variant of {@code event}, with the same event id, aggregate and position, addressed to a destination the
     * broker does not have (a topic that does not exist and will not be created, an exchange that was never
     * declared). The publisher may answer it as it sees fit except acked; it must not change the outcome of
     * messages to other destinations. The default is {@link #poisonOf}.
     */
    protected OutboxEvent missingDestinationOf(OutboxEvent event) {
        return poisonOf(event);
    }

    @BeforeEach
    final void openThePublisher() throws Exception {
        publisher = track(newPublisher());
    }

    @AfterEach
    final void closeEveryPublisher() {
        for (MessagePublisher each : opened) {
            each.close();
        }
        opened.clear();
    }

    /** The publisher under test of the current test. */
    protected final MessagePublisher publisher() {
        return publisher;
    }

    // ----------------------------------------------------------------------------------- outcomes

    @Test
    final void publishAnswersOneOutcomePerDeliveryInInputOrder() {
        List<ClaimedDelivery> batch = claimedDeliveriesOf(interleavedEvents(3, 2));

        List<PublishOutcome> outcomes = publisher.publish(batch);

        assertThat(outcomes).extracting(PublishOutcome::eventId).containsExactlyElementsOf(idsOf(batch));
        assertThat(outcomes).allSatisfy(outcome -> assertThat(outcome).isInstanceOf(PublishOutcome.Acked.class));
    }

    @Test
    final void anEmptyBatchGetsNoOutcomes() {
        assertThat(publisher.publish(List.of())).isEmpty();
    }

    @Test
    final void aGoodBatchIsAckedAndReceivedWithKeyHeadersAndPayload() {
        List<OutboxEvent> events = List.of(anEvent(), anEvent(), anEvent());

        List<PublishOutcome> outcomes = publisher.publish(claimedDeliveriesOf(events));

        assertThat(outcomes).allMatch(PublishOutcome::isAcked, "acked");
        List<ReceivedMessage> received = awaitReceived(3, RECEIVE_TIMEOUT);
        assertThat(received).extracting(ReceivedMessage::eventId)
                .containsExactlyInAnyOrderElementsOf(events.stream().map(OutboxEvent::eventId).toList());
        for (OutboxEvent event : events) {
            ReceivedMessage message = received.stream().filter(m -> m.eventId().equals(event.eventId()))
                    .findFirst().orElseThrow();
            assertThat(message.key()).as("key of %s", event).isEqualTo(event.aggregateId());
            assertThat(message.eventType()).as("event type of %s", event).isEqualTo(event.eventType());
            assertThat(message.aggregateType()).as("aggregate type of %s", event).isEqualTo(event.aggregateType());
            assertThat(message.payload()).as("payload of %s", event).isEqualTo(event.payload());
            assertThat(message.headers()).as("headers of %s", event).containsAllEntriesOf(event.headers());
        }
    }

    @Test
    final void orderIsKeptPerAggregateAcrossSeveralAggregates() {
        List<OutboxEvent> events = interleavedEvents(4, 5);

        List<PublishOutcome> outcomes = publisher.publish(claimedDeliveriesOf(events));

        assertThat(outcomes).allMatch(PublishOutcome::isAcked, "acked");
        List<ReceivedMessage> received = awaitReceived(events.size(), RECEIVE_TIMEOUT);
        assertThat(idsByKey(received)).isEqualTo(idsByAggregate(events));
    }

    @Test
    final void afterAFailedMessageLaterMessagesOfItsAggregateAreNotAttempted() {
        List<OutboxEvent> events = eventsFor(anAggregateId(), 5);
        List<OutboxEvent> withPoison = new ArrayList<>(events);
        withPoison.set(2, poisonOf(events.get(2)));

        List<PublishOutcome> outcomes = publisher.publish(claimedDeliveriesOf(withPoison));

        assertThat(outcomes).extracting(PublishOutcome::eventId).containsExactlyElementsOf(idsOfEvents(events));
        assertThat(outcomes).extracting(outcome -> (Object) outcome.getClass()).containsExactly(
                PublishOutcome.Acked.class, PublishOutcome.Acked.class, PublishOutcome.PermanentFailure.class,
                PublishOutcome.NotAttempted.class, PublishOutcome.NotAttempted.class);
        assertThat(awaitReceived(2, RECEIVE_TIMEOUT)).extracting(ReceivedMessage::eventId)
                .as("the consumer sees the messages before the failure, and nothing after it")
                .containsExactlyElementsOf(idsOfEvents(events.subList(0, 2)));

        List<PublishOutcome> retry = publisher.publish(claimedDeliveriesOf(events.subList(2, 5)));

        assertThat(retry).allMatch(PublishOutcome::isAcked, "acked");
        assertThat(awaitReceived(5, RECEIVE_TIMEOUT)).extracting(ReceivedMessage::eventId)
                .as("after the fixed retry the consumer has every message once, in order")
                .containsExactlyElementsOf(idsOfEvents(events));
    }

    @Test
    final void aFailureInOneAggregateDoesNotHoldBackAnother() {
        String failing = anAggregateId();
        String healthy = anAggregateId();
        List<OutboxEvent> failingEvents = eventsFor(failing, 2);
        List<OutboxEvent> healthyEvents = eventsFor(healthy, 2);
        List<OutboxEvent> batch = List.of(poisonOf(failingEvents.get(0)), healthyEvents.get(0),
                failingEvents.get(1), healthyEvents.get(1));

        List<PublishOutcome> outcomes = publisher.publish(claimedDeliveriesOf(batch));

        assertThat(outcomes).extracting(outcome -> (Object) outcome.getClass()).containsExactly(
                PublishOutcome.PermanentFailure.class, PublishOutcome.Acked.class,
                PublishOutcome.NotAttempted.class, PublishOutcome.Acked.class);
        assertThat(awaitReceived(2, RECEIVE_TIMEOUT)).extracting(ReceivedMessage::eventId)
                .containsExactlyElementsOf(idsOfEvents(healthyEvents));
    }

    @Test
    final void oneMissingDestinationAmongManyAggregatesLeavesEveryOtherAggregateAcked() {
        List<OutboxEvent> events = interleavedEvents(20, 2);
        OutboxEvent misdirected = events.get(7);
        OutboxEvent itsFollower = events.get(27);
        List<OutboxEvent> batch = new ArrayList<>(events);
        batch.set(7, missingDestinationOf(misdirected));
        List<OutboxEvent> others = events.stream()
                .filter(event -> !event.aggregateId().equals(misdirected.aggregateId())).toList();

        List<PublishOutcome> outcomes = publisher.publish(claimedDeliveriesOf(batch));

        assertThat(outcomes).extracting(PublishOutcome::eventId).containsExactlyElementsOf(idsOfEvents(events));
        Map<UUID, PublishOutcome> byId = outcomes.stream()
                .collect(Collectors.toMap(PublishOutcome::eventId, outcome -> outcome));
        assertThat(others).as("one missing destination holds back nothing of the other aggregates")
                .allSatisfy(event -> assertThat(byId.get(event.eventId())).isInstanceOf(PublishOutcome.Acked.class));
        assertThat(byId.get(misdirected.eventId()).isAcked()).as("the misdirected message is not acked").isFalse();
        assertThat(byId.get(itsFollower.eventId())).as("the later message of its aggregate")
                .isInstanceOf(PublishOutcome.NotAttempted.class);
        assertThat(awaitReceived(others.size(), RECEIVE_TIMEOUT)).extracting(ReceivedMessage::eventId)
                .containsExactlyInAnyOrderElementsOf(idsOfEvents(others));
    }

    @Test
    final void concurrentCallsFromSeveralWorkersAreEachAnsweredInOrder() throws Exception {
        int workers = 4;
        List<List<OutboxEvent>> batches = new ArrayList<>();
        for (int i = 0; i < workers; i++) {
            batches.add(eventsFor(anAggregateId(), 5));
        }
        ExecutorService threads = Executors.newFixedThreadPool(workers);
        try {
            List<Future<List<PublishOutcome>>> calls = new ArrayList<>();
            for (List<OutboxEvent> batch : batches) {
                calls.add(threads.submit((Callable<List<PublishOutcome>>) () ->
                        publisher.publish(claimedDeliveriesOf(batch))));
            }
            for (int i = 0; i < workers; i++) {
                List<PublishOutcome> outcomes = calls.get(i).get(RECEIVE_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
                assertThat(outcomes).extracting(PublishOutcome::eventId)
                        .containsExactlyElementsOf(idsOfEvents(batches.get(i)));
                assertThat(outcomes).allMatch(PublishOutcome::isAcked, "acked");
            }
        } finally {
            threads.shutdownNow();
        }
        List<OutboxEvent> all = batches.stream().flatMap(List::stream).toList();
        assertThat(idsByKey(awaitReceived(all.size(), RECEIVE_TIMEOUT))).isEqualTo(idsByAggregate(all));
    }

    // ----------------------------------------------------------------------------------- failure modes

    @Test
    final void anUnreachableBrokerAnswersNotAttemptedForFiftyAggregatesWithinThePublishTimeout() throws Exception {
        MessagePublisher unreachable = track(newPublisherForUnreachableBroker());
        List<OutboxEvent> events = interleavedEvents(50, 1);
        Duration bound = publishTimeout().plus(PUBLISH_TIMEOUT_SLACK);

        // One call is bounded as a whole: a wait per aggregate (or per message) would multiply the bound.
        List<PublishOutcome> outcomes = assertTimeoutPreemptively(bound,
                () -> unreachable.publish(claimedDeliveriesOf(events)),
                () -> "50 aggregates against an unreachable broker took longer than " + bound.toMillis() + " ms");

        assertThat(outcomes).extracting(PublishOutcome::eventId).containsExactlyElementsOf(idsOfEvents(events));
        assertThat(outcomes).as("nothing reached a broker, so nothing may be charged an attempt")
                .allSatisfy(outcome -> assertThat(outcome).isInstanceOf(PublishOutcome.NotAttempted.class));
    }

    @Test
    final void aClosedPublisherRefusesToPublishAndClosesAgainQuietly() {
        publisher.close();

        assertThatThrownBy(() -> publisher.publish(claimedDeliveriesOf(anEvent())))
                .isInstanceOf(IllegalStateException.class);
        assertThatCode(publisher::close).doesNotThrowAnyException();
    }

    // ----------------------------------------------------------------------------------- helpers

    private MessagePublisher track(MessagePublisher created) {
        opened.add(created);
        return created;
    }

    private static List<UUID> idsOf(List<ClaimedDelivery> batch) {
        return batch.stream().map(ClaimedDelivery::eventId).toList();
    }

    private static List<UUID> idsOfEvents(List<OutboxEvent> events) {
        return events.stream().map(OutboxEvent::eventId).toList();
    }

    private static Map<String, List<UUID>> idsByAggregate(List<OutboxEvent> events) {
        return events.stream().collect(Collectors.groupingBy(OutboxEvent::aggregateId, LinkedHashMap::new,
                Collectors.mapping(OutboxEvent::eventId, Collectors.toList())));
    }

    private static Map<String, List<UUID>> idsByKey(List<ReceivedMessage> received) {
        return received.stream().collect(Collectors.groupingBy(ReceivedMessage::key, LinkedHashMap::new,
                Collectors.mapping(ReceivedMessage::eventId, Collectors.toList())));
    }
}
