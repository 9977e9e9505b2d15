package io.queuebox.testkit.publisher;

import static io.queuebox.testkit.fixtures.OutboxFixtures.anAggregateId;
import static io.queuebox.testkit.fixtures.OutboxFixtures.anEvent;
import static io.queuebox.testkit.fixtures.OutboxFixtures.claimedDeliveriesOf;
import static io.queuebox.testkit.fixtures.OutboxFixtures.eventsFor;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class RecordingPublisherScriptTest {

    private final RecordingPublisher broker = RecordingPublisher.acking();

    @Test
    void acksAndRecordsEverythingByDefault() {
        List<OutboxEvent> events = List.of(anEvent(), anEvent());

        assertThat(broker.publish(claimedDeliveriesOf(events))).allMatch(PublishOutcome::isAcked);

        assertThat(broker.delivered()).containsExactlyElementsOf(events);
        assertThat(broker.attempts()).hasSize(2);
    }

    @Test
    void aScriptForAnEventAppliesToThatEventOnly() {
        OutboxEvent failing = anEvent();
        OutboxEvent fine = anEvent();
        broker.on(failing.eventId()).failPermanently("too large");

        List<PublishOutcome> outcomes = broker.publish(claimedDeliveriesOf(failing, fine));

        assertThat(outcomes).containsExactly(PublishOutcome.permanent(failing.eventId(), "too large"),
                PublishOutcome.acked(fine.eventId()));
        assertThat(broker.delivered()).containsExactly(fine);
    }

    @Test
    void aLimitedScriptFallsBackAfterItsUses() {
        OutboxEvent flaky = anEvent();
        broker.on(flaky.eventId()).times(2).failRetriably("broker timeout");

        List<PublishOutcome> outcomes = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            outcomes.addAll(broker.publish(claimedDeliveriesOf(flaky)));
        }

        assertThat(outcomes).extracting(PublishOutcome::isAcked).containsExactly(false, false, true);
        assertThat(broker.delivered()).containsExactly(flaky);
    }

    @Test
    void theNewestScriptWins() {
        OutboxEvent event = anEvent();
        broker.when(delivery -> true).failRetriably("down");
        broker.on(event.eventId()).ack();

        assertThat(broker.publish(claimedDeliveriesOf(event))).allMatch(PublishOutcome::isAcked);
        broker.resetScripts();
        assertThat(broker.publish(claimedDeliveriesOf(anEvent()))).allMatch(PublishOutcome::isAcked);
    }

    @Test
    void laterMessagesOfAFailedAggregateAreNotAttempted() {
        List<OutboxEvent> events = eventsFor(anAggregateId(), 3);
        OutboxEvent other = anEvent();
        broker.on(events.get(0).eventId()).failRetriably("timeout");

        List<PublishOutcome> outcomes = broker.publish(
                claimedDeliveriesOf(events.get(0), events.get(1), other, events.get(2)));

        assertThat(outcomes.get(1)).isEqualTo(PublishOutcome.notAttempted(events.get(1).eventId(),
                "not attempted: an earlier event of aggregate " + events.get(0).aggregate() + " failed"));
        assertThat(outcomes.get(2).isAcked()).isTrue();
        assertThat(outcomes.get(3)).isInstanceOf(PublishOutcome.NotAttempted.class);
        assertThat(broker.attempts()).hasSize(2);
        assertThat(broker.delivered()).containsExactly(other);
    }

    @Test
    void aDelayedScriptAnswersAfterTheDelay() {
        OutboxEvent slow = anEvent();
        broker.on(slow.eventId()).delayBy(Duration.ofMillis(100)).ack();

        long started = System.nanoTime();
        broker.publish(claimedDeliveriesOf(slow));

        assertThat(Duration.ofNanos(System.nanoTime() - started)).isGreaterThanOrEqualTo(Duration.ofMillis(100));
        assertThat(broker.delivered()).containsExactly(slow);
    }

    @Test
    void randomFailuresAreReproducibleWithASeed() {
        RecordingPublisher again = RecordingPublisher.acking().failRandomly(0.5, new Random(7));
        broker.failRandomly(0.5, new Random(7));
        List<OutboxEvent> events = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            events.add(anEvent());
        }

        List<Boolean> first = broker.publish(claimedDeliveriesOf(events)).stream().map(PublishOutcome::isAcked).toList();
        List<Boolean> second = again.publish(claimedDeliveriesOf(events)).stream().map(PublishOutcome::isAcked).toList();

        assertThat(first).isEqualTo(second).contains(true, false);
        assertThatThrownBy(() -> broker.failRandomly(1.5, new Random())).hasMessageContaining("probability");
    }

    @Test
    void closedBrokerReportsDownAndRefusesToPublish() {
        broker.close();

        assertThat(broker.health().isUp()).isFalse();
        assertThatThrownBy(() -> broker.publish(List.of())).isInstanceOf(IllegalStateException.class);
    }
}
