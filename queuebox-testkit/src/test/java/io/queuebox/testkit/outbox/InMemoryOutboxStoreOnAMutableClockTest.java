package io.queuebox.testkit.outbox;

import static io.queuebox.testkit.fixtures.OutboxFixtures.aClaimRequest;
import static io.queuebox.testkit.fixtures.OutboxFixtures.anAggregateId;
import static io.queuebox.testkit.fixtures.OutboxFixtures.anEvent;
import static io.queuebox.testkit.fixtures.OutboxFixtures.eventsFor;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.queuebox.domain.RowStatus;
import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxWriteException;
import io.queuebox.ports.Reschedule;
import io.queuebox.testkit.MutableClock;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** What the fake adds to the contract: exact time on a clock the test moves, transactions and inspection. */
class InMemoryOutboxStoreOnAMutableClockTest {

    private final MutableClock clock = MutableClock.create();
    private final InMemoryOutboxStore store = InMemoryOutboxStore.withClock(clock);

    @Test
    void aLeaseExpiresExactlyWhenTheClockPassesIt() {
        store.enqueue(anEvent());
        ClaimBatch batch = store.claim(aClaimRequest().leasedFor(Duration.ofSeconds(30)).build());

        clock.advance(Duration.ofSeconds(30));
        assertThat(store.claim(aClaimRequest().by("other-relay").build()).isEmpty())
                .as("a lease ending now is expired").isFalse();
        assertThat(store.markSent(batch.lease(), ids(batch))).as("the stale token lost the row").isZero();
    }

    @Test
    void aLeaseIsLiveUpToItsLastInstant() {
        store.enqueue(anEvent());
        store.claim(aClaimRequest().leasedFor(Duration.ofSeconds(30)).build());

        clock.advance(Duration.ofSeconds(30).minusMillis(1));

        assertThat(store.claim(aClaimRequest().build()).isEmpty()).isTrue();
    }

    @Test
    void timeUntilNextDueFollowsTheClock() {
        OutboxEvent event = anEvent();
        store.enqueue(event);
        ClaimBatch batch = store.claim(aClaimRequest().build());
        store.reschedule(batch.lease(), List.of(new Reschedule(event.eventId(), Duration.ofSeconds(5), "timeout")));

        assertThat(store.timeUntilNextDue()).contains(Duration.ofSeconds(5));
        clock.advance(Duration.ofSeconds(2));
        assertThat(store.timeUntilNextDue()).contains(Duration.ofSeconds(3));
        clock.advance(Duration.ofSeconds(10));
        assertThat(store.timeUntilNextDue()).contains(Duration.ZERO);
        assertThat(store.row(event.eventId())).hasValueSatisfying(row -> {
            assertThat(row.attempts()).isEqualTo(1);
            assertThat(row.lastError()).isEqualTo("timeout");
        });
    }

    @Test
    void purgeKeepsRowsSentWithinTheRetention() {
        OutboxEvent old = anEvent();
        OutboxEvent recent = anEvent();
        store.enqueue(old);
        sendAll(store.claim(aClaimRequest().build()));
        clock.advance(Duration.ofDays(7));
        store.enqueue(recent);
        sendAll(store.claim(aClaimRequest().build()));
        clock.advance(Duration.ofHours(1));

        assertThat(store.purgeSent(Duration.ofDays(7), 100)).isEqualTo(1);
        assertThat(store.statusOf(old.eventId())).isEmpty();
        assertThat(store.statusOf(recent.eventId())).contains(RowStatus.SENT);
    }

    @Test
    void anExpiredLeaseKeepsItsTokenUntilSomethingEndsIt() {
        OutboxEvent event = anEvent();
        store.enqueue(event);
        ClaimBatch batch = store.claim(aClaimRequest().leasedFor(Duration.ofSeconds(1)).build());
        clock.advance(Duration.ofMinutes(1));

        assertThat(store.row(event.eventId()).orElseThrow().lease()).isEqualTo(batch.lease());
        assertThat(store.release(batch.lease(), ids(batch))).isEqualTo(1);
        assertThat(store.row(event.eventId()).orElseThrow().lease()).isNull();
    }

    @Test
    void aTransactionsRowsTakeTheirSequenceAtInsertAndAppearAtCommit() {
        String aggregate = anAggregateId();
        List<OutboxEvent> events = eventsFor(aggregate, 2);
        InMemoryOutboxStore.Transaction early = store.begin();
        store.enqueueAll(early, events);
        store.enqueue(anEvent());

        assertThat(store.rows()).hasSize(1);
        early.commit();

        assertThat(early.sequences()).containsExactly(1L, 2L);
        assertThat(store.rows()).extracting(InMemoryOutboxStore.StoredRow::sequence).containsExactly(1L, 2L, 3L);
        assertThatThrownBy(() -> store.enqueue(early, anEvent())).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void anOpenTransactionHoldsBackOnlyTheLaterRowsOfItsOwnAggregatesAndOnlyWithOrdering() {
        String aggregate = anAggregateId();
        List<OutboxEvent> events = eventsFor(aggregate, 2);
        OutboxEvent other = anEvent();
        InMemoryOutboxStore.Transaction early = store.begin();
        store.enqueue(early, events.get(0));
        store.enqueueAll(List.of(events.get(1), other));

        assertThat(store.claim(aClaimRequest().build()).deliveries()).extracting(ClaimedDelivery::event)
                .containsExactly(other);
        assertThat(store.claim(aClaimRequest().withoutOrdering().build()).deliveries())
                .extracting(ClaimedDelivery::event).containsExactly(events.get(1));
        early.commit();
        assertThat(store.claim(aClaimRequest().withoutOrdering().build()).deliveries())
                .extracting(ClaimedDelivery::event).containsExactly(events.get(0));
    }

    @Test
    void aRolledBackOrAbandonedTransactionLeavesNothing() {
        InMemoryOutboxStore.Transaction rolledBack = store.begin();
        store.enqueue(rolledBack, anEvent());
        rolledBack.rollback();
        try (InMemoryOutboxStore.Transaction abandoned = store.begin()) {
            store.enqueue(abandoned, anEvent());
        }

        assertThat(store.rows()).isEmpty();
        assertThat(store.stats().pending()).isZero();
    }

    @Test
    void aDuplicateEventIdIsRefusedLikeAUniqueKey() {
        OutboxEvent event = anEvent();
        store.enqueue(event);

        assertThatThrownBy(() -> store.enqueue(event)).isInstanceOf(OutboxWriteException.class)
                .hasMessageContaining(event.eventId().toString());
    }

    @Test
    void aNullEventIsABadArgument() {
        InMemoryOutboxStore.Transaction transaction = store.begin();

        assertThatThrownBy(() -> store.enqueue(transaction, null)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("event");
    }

    @Test
    void deleteOnSendRemovesTheRow() {
        InMemoryOutboxStore deleting = InMemoryOutboxStore.builder().clock(clock).deleteOnSend(true).build();
        OutboxEvent event = anEvent();
        deleting.enqueue(event);
        ClaimBatch batch = deleting.claim(aClaimRequest().build());

        assertThat(deleting.markSent(batch.lease(), ids(batch))).isEqualTo(1);

        assertThat(deleting.statusOf(event.eventId())).isEmpty();
        assertThat(deleting.rows()).isEmpty();
    }

    @Test
    void sentRowsCanBeInspectedInSendOrder() {
        List<OutboxEvent> events = eventsFor(anAggregateId(), 3);
        store.enqueueAll(events);
        sendAll(store.claim(aClaimRequest().build()));

        assertThat(store.sentEventIds()).containsExactlyElementsOf(events.stream().map(OutboxEvent::eventId).toList());
        assertThat(store.rows()).allSatisfy(row -> assertThat(row.sentAt()).isEqualTo(clock.instant()));
    }

    private void sendAll(ClaimBatch batch) {
        assertThat(store.markSent(batch.lease(), ids(batch))).isEqualTo(batch.size());
    }

    private static List<UUID> ids(ClaimBatch batch) {
        return batch.deliveries().stream().map(ClaimedDelivery::eventId).toList();
    }
}
