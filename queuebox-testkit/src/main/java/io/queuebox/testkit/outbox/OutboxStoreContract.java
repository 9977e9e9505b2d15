package io.queuebox.testkit.outbox;

import static io.queuebox.testkit.fixtures.OutboxFixtures.AGGREGATE_TYPE;
import static io.queuebox.testkit.fixtures.OutboxFixtures.aClaimRequest;
import static io.queuebox.testkit.fixtures.OutboxFixtures.anAggregateId;
import static io.queuebox.testkit.fixtures.OutboxFixtures.anEvent;
import static io.queuebox.testkit.fixtures.OutboxFixtures.anEventFor;
import static io.queuebox.testkit.fixtures.OutboxFixtures.eventsFor;
import static io.queuebox.testkit.fixtures.OutboxFixtures.interleavedEvents;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.BacklogStats;
import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.ports.Park;
import io.queuebox.ports.ParkedEvent;
import io.queuebox.ports.ReplaySelector;
import io.queuebox.ports.Reschedule;
import io.queuebox.testkit.fixtures.OutboxFixtures.ClaimRequestBuilder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.core.ConditionFactory;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The behaviour every {@link OutboxStore} must show, as one suite of scenarios. Extend it once per store,
 * with the backend in the class name ({@code PostgresOutboxStoreTest extends OutboxStoreContract}), and
 * implement the hooks:
 *
 * <ul>
 *   <li>{@link #newStoreOnEmptyOutbox()}: called before every test; answers a store on a fresh, empty
 *       outbox (a new schema, a truncated table, a new in-memory store);</li>
 *   <li>{@link #secondStoreOnSameOutbox()}: another store on the same outbox through its own connection
 *       or pool, to play a second relay (defaults to the same store);</li>
 *   <li>{@link #writeCommitted(List)}: writes events in one committed transaction, the way an application
 *       does through the store's {@code OutboxWriter};</li>
 *   <li>{@link #beginUncommittedWrite(OutboxEvent)}: inserts an event in a transaction left open, for the
 *       out-of-order commit scenarios (of two aggregates, and of one aggregate, where the store must either
 *       block the later writer or hold its row back).</li>
 * </ul>
 *
 * <p>Time is real: SQL stores compare due times and leases on the database clock, so the scenarios use
 * short durations (leases of {@value #SHORT_LEASE_MILLIS} ms, retry delays of 0 or
 * {@value #SHORT_DELAY_MILLIS} ms) and wait with Awaitility. A subclass may add its own {@code @Test}s;
 * the contract's own are {@code final}.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
public abstract class OutboxStoreContract {

    /** The lease length of scenarios that wait for a lease to expire. */
    protected static final long SHORT_LEASE_MILLIS = 300;
    /** The retry delay of scenarios that wait for a row to fall due. */
    protected static final long SHORT_DELAY_MILLIS = 300;

    private static final Duration SHORT_LEASE = Duration.ofMillis(SHORT_LEASE_MILLIS);
    private static final Duration SHORT_DELAY = Duration.ofMillis(SHORT_DELAY_MILLIS);
    private static final Duration LONG_LEASE = Duration.ofSeconds(30);
    /** How long a concurrent write gets to either commit or show that it is blocked. */
    private static final Duration WRITE_SETTLES = Duration.ofSeconds(1);

    private final Map<UUID, Long> sentSequences = new ConcurrentHashMap<>();
    private OutboxStore store;

    /** Answers a store on a fresh, empty outbox. Called before each test. */
    protected abstract OutboxStore newStoreOnEmptyOutbox() throws Exception;

    /**
     * Answers another store on the outbox of the last {@link #newStoreOnEmptyOutbox()}, reaching it through
     * its own connection or pool, as a second relay process would. Defaults to the same store. Called a
     * few times per test: create it once per test and close it in the subclass's own {@code @AfterEach}.
     */
    protected OutboxStore secondStoreOnSameOutbox() {
        return store;
    }

    /**
     * Writes the events, in list order, in one transaction that commits before this returns. Must be safe to
     * call from another thread while an {@link #beginUncommittedWrite uncommitted write} is open, and may
     * block until that write ends if the store serialises the writers of an aggregate.
     */
    protected abstract void writeCommitted(List<OutboxEvent> events);

    /**
     * Begins a transaction, inserts {@code event} in it (so it takes its sequence now) and returns without
     * committing. The row must be invisible to claims until {@link UncommittedWrite#commit()}.
     */
    protected abstract UncommittedWrite beginUncommittedWrite(OutboxEvent event);

    /**
     * Writes, committed, a row of aggregate {@code aggregateId} (type {@code order}) that can never become an
     * {@link OutboxEvent}, as a tool writing around the writer could (for example a blank event type), and
     * answers its event id. Empty by default: a store that holds only events (an in-memory store) cannot hold
     * such a row, and the scenario that needs one is skipped.
     */
    protected Optional<UUID> writeCommittedRowNoEventCanBeMadeOf(String aggregateId) {
        return Optional.empty();
    }

    /** Whether the store deletes rows on {@code markSent} instead of marking them sent; false by default. */
    protected boolean deletesSentRows() {
        return false;
    }

    /**
     * Whether a claim whose lease ran out keeps accepting its token until another claimer re-claims its rows;
     * true by default (a lease written on the rows). False for a store that holds a claim in the database
     * session itself (row locks in an open transaction) and whose database ends the claim when its lease runs
     * out: the claim is then lost at once, its rows claimable again, exactly as they were.
     */
    protected boolean anExpiredClaimKeepsItsToken() {
        return true;
    }

    /** An open write transaction, as {@link #beginUncommittedWrite} left it. Each method ends it. */
    public interface UncommittedWrite {
        void commit();

        void rollback();
    }

    @BeforeEach
    final void startWithAnEmptyOutbox() throws Exception {
        store = newStoreOnEmptyOutbox();
    }

    /** The store under test of the current test. */
    protected final OutboxStore store() {
        return store;
    }

    // ----------------------------------------------------------------------------------- claiming

    @Test
    final void claimOnAnEmptyOutboxReturnsAnEmptyBatch() {
        ClaimBatch batch = store.claim(aClaimRequest().build());

        assertThat(batch.isEmpty()).isTrue();
        assertThat(batch.lease()).isNotNull();
        assertThat(batch.heldElsewhere()).as("nothing is due, so nothing is held elsewhere").isFalse();
    }

    @Test
    final void claimReturnsDueRowsInSequenceOrderUpToMaxRows() {
        List<OutboxEvent> written = List.of(anEvent(), anEvent(), anEvent(), anEvent(), anEvent());
        writeCommitted(written);

        ClaimBatch first = store.claim(aClaimRequest().forAtMost(3).build());
        ClaimBatch second = store.claim(aClaimRequest().forAtMost(3).build());
        ClaimBatch third = store.claim(aClaimRequest().forAtMost(3).build());

        assertThat(events(first)).containsExactlyElementsOf(written.subList(0, 3));
        assertThat(events(second)).containsExactlyElementsOf(written.subList(3, 5));
        assertThat(third.isEmpty()).isTrue();
        List<Long> sequences = new ArrayList<>(sequences(first));
        sequences.addAll(sequences(second));
        assertThat(sequences).isSorted().doesNotHaveDuplicates();
    }

    @Test
    final void claimedRowsCarryTheEventAsWrittenTheBatchLeaseAndNoAttempts() {
        OutboxEvent event = anEvent().withDestination("orders-topic").withContentType("application/vnd.order+json")
                .withHeaders(Map.of("traceparent", "00-abc-def-01", "tenant", "acme"));
        writeCommitted(List.of(event));

        ClaimBatch batch = store.claim(aClaimRequest().build());

        assertThat(batch.deliveries()).singleElement().satisfies(delivery -> {
            assertThat(delivery.event()).isEqualTo(event);
            assertThat(delivery.event().payload()).isEqualTo(event.payload());
            assertThat(delivery.event().headers()).isEqualTo(event.headers());
            assertThat(delivery.lease()).isEqualTo(batch.lease());
            assertThat(delivery.attempts()).isZero();
            assertThat(delivery.createdAt()).isNotNull();
        });
    }

    @Test
    final void eachClaimGetsItsOwnLeaseToken() {
        writeCommitted(List.of(anEvent(), anEvent()));

        ClaimBatch first = store.claim(aClaimRequest().forAtMost(1).build());
        ClaimBatch second = store.claim(aClaimRequest().forAtMost(1).build());

        assertThat(first.lease()).isNotEqualTo(second.lease());
    }

    @Test
    final void aSentRowIsNeverClaimedAgain() {
        OutboxEvent event = anEvent();
        writeCommitted(List.of(event));
        ClaimBatch batch = store.claim(aClaimRequest().leasedFor(SHORT_LEASE).build());

        assertThat(store.markSent(batch.lease(), ids(batch))).isEqualTo(1);

        pause(SHORT_LEASE.multipliedBy(2));
        assertThat(store.claim(aClaimRequest().build()).isEmpty()).isTrue();
        assertThat(store.stats().pending()).isZero();
    }

    @Test
    final void markSentCountsOnlyRowsOfTheLease() {
        OutboxEvent claimed = anEvent();
        OutboxEvent notClaimed = anEvent();
        writeCommitted(List.of(claimed, notClaimed));
        ClaimBatch batch = store.claim(aClaimRequest().forAtMost(1).build());

        int marked = store.markSent(batch.lease(), List.of(claimed.eventId(), notClaimed.eventId(), UUID.randomUUID()));

        assertThat(marked).isEqualTo(1);
        assertThat(events(store.claim(aClaimRequest().build()))).containsExactly(notClaimed);
    }

    @Test
    final void releaseGivesRowsBackUnchanged() {
        OutboxEvent event = anEvent();
        writeCommitted(List.of(event));
        ClaimBatch batch = store.claim(aClaimRequest().build());

        assertThat(store.release(batch.lease(), ids(batch))).isEqualTo(1);

        ClaimBatch again = store.claim(aClaimRequest().build());
        assertThat(again.deliveries()).singleElement().satisfies(delivery -> {
            assertThat(delivery.event()).isEqualTo(event);
            assertThat(delivery.attempts()).isZero();
            assertThat(delivery.sequence()).isEqualTo(batch.deliveries().get(0).sequence());
        });
    }

    // ----------------------------------------------------------------------------------- ordering

    @Test
    final void anAggregatesRowsAreClaimedTogetherInWriteOrder() {
        List<OutboxEvent> events = eventsFor(anAggregateId(), 3);
        writeCommitted(events);

        assertThat(events(store.claim(aClaimRequest().build()))).containsExactlyElementsOf(events);
    }

    @Test
    final void orderingKeepsAnAggregatesLaterRowUntilTheEarlierIsSent() {
        String aggregate = anAggregateId();
        OutboxEvent first = anEventFor(aggregate, 1);
        OutboxEvent second = anEventFor(aggregate, 2);
        OutboxEvent other = anEvent();
        writeCommitted(List.of(first, second, other));

        ClaimBatch claimedFirst = store.claim(aClaimRequest().forAtMost(1).build());
        ClaimBatch whileFirstIsLeased = store.claim(aClaimRequest().build());

        assertThat(events(claimedFirst)).containsExactly(first);
        assertThat(events(whileFirstIsLeased)).containsExactly(other);

        store.markSent(claimedFirst.lease(), ids(claimedFirst));
        assertThat(events(store.claim(aClaimRequest().build()))).containsExactly(second);
    }

    @Test
    final void aRetryNeverLetsLaterRowsOfItsAggregateOvertakeIt() {
        List<OutboxEvent> events = eventsFor(anAggregateId(), 3);
        writeCommitted(events);
        ClaimBatch batch = store.claim(aClaimRequest().build());
        assertThat(events(batch)).containsExactlyElementsOf(events);

        long rescheduledAt = System.nanoTime();
        store.reschedule(batch.lease(), List.of(new Reschedule(events.get(0).eventId(), SHORT_DELAY, "broker timeout")));
        store.release(batch.lease(), List.of(events.get(1).eventId(), events.get(2).eventId()));

        assertThat(store.claim(aClaimRequest().build()).isEmpty())
                .as("nothing of the aggregate is claimable while its first row waits for its retry").isTrue();

        ClaimBatch retry = awaitClaim(store, aClaimRequest().forAtMost(1));
        assertThat(Duration.ofNanos(System.nanoTime() - rescheduledAt))
                .as("the retry delay is respected").isGreaterThanOrEqualTo(SHORT_DELAY.minusMillis(50));
        assertThat(events(retry)).containsExactly(events.get(0));
        assertThat(retry.deliveries().get(0).attempts()).isEqualTo(1);

        assertThat(store.claim(aClaimRequest().build()).isEmpty())
                .as("the later rows wait while the retried row is leased").isTrue();

        store.markSent(retry.lease(), ids(retry));
        assertThat(events(store.claim(aClaimRequest().build()))).containsExactlyElementsOf(events.subList(1, 3));
    }

    @Test
    final void aLongTailBehindABlockedHeadHidesNothingWrittenAfterIt() {
        // Longer than the bounded look-ahead a store may take first (PostgreSQL: 4 batches, at least 100 rows).
        List<OutboxEvent> hot = eventsFor(anAggregateId(), 150);
        String cold = anAggregateId();
        List<OutboxEvent> coldEvents = eventsFor(cold, 3);
        OutboxEvent other = anEvent();
        List<OutboxEvent> all = new ArrayList<>(hot);
        all.add(coldEvents.get(0));
        all.add(other);
        all.addAll(coldEvents.subList(1, 3));
        writeCommitted(all);

        ClaimBatch head = store.claim(aClaimRequest().forAtMost(1).leasedFor(LONG_LEASE).build());
        assertThat(events(head)).containsExactly(hot.get(0));
        ClaimBatch behind = store.claim(aClaimRequest().forAtMost(10).build());

        assertThat(events(behind)).as("everything after the blocked tail, in write order, and none of the tail")
                .containsExactly(coldEvents.get(0), other, coldEvents.get(1), coldEvents.get(2));
    }

    @Test
    final void withoutOrderingLaterRowsOfAnAggregateAreClaimable() {
        List<OutboxEvent> events = eventsFor(anAggregateId(), 3);
        writeCommitted(events);

        ClaimBatch first = store.claim(aClaimRequest().withoutOrdering().forAtMost(1).build());
        store.reschedule(first.lease(), List.of(new Reschedule(events.get(0).eventId(), LONG_LEASE, "failed")));
        ClaimBatch rest = store.claim(aClaimRequest().withoutOrdering().build());

        assertThat(events(first)).containsExactly(events.get(0));
        assertThat(events(rest)).containsExactlyElementsOf(events.subList(1, 3));
    }

    /**
     * Random histories of three claimers (two of them on the second store) against {@link ClaimRuleModel}: writes over
     * a few aggregates, claims while other batches are open, outcomes of every kind (sent, retried at once, retried
     * much later, parked, released), replays. Every claim must return exactly the rows the rule allows, first by
     * sequence, with their attempt counts; an empty claim may say the rows are held elsewhere only while another
     * batch is open; every outcome must count every row of its live batch. Fixed seeds: a failure names its seed and
     * step, and reruns the same history.
     */
    @Test
    final void randomHistoriesOfThreeClaimersGetExactlyWhatTheRuleAllowsAtEveryClaim() {
        OutboxStore[] claimers = {store, secondStoreOnSameOutbox(), store};
        // One model for all: the rows a history leaves in backoff or parked stay in the outbox for the next.
        ClaimRuleModel model = new ClaimRuleModel();
        int[] seen = new int[3];
        for (long seed = 1; seed <= 4; seed++) {
            new ClaimHistory(seed, claimers, model, seen).run(120);
        }
        // The histories must reach what they are for, or they would pass without testing it.
        assertThat(seen[0]).as("claims that took rows while another batch was open").isGreaterThanOrEqualTo(20);
        assertThat(seen[1]).as("claims from which the rule kept a ready row back").isGreaterThanOrEqualTo(50);
        assertThat(seen[2]).as("claims a row in backoff or parked kept something back from").isGreaterThanOrEqualTo(30);
    }

    /** One history of {@link #randomHistoriesOfThreeClaimersGetExactlyWhatTheRuleAllowsAtEveryClaim}. */
    private final class ClaimHistory {
        /** More unsent rows than this and the history stops writing: a store may look only so far ahead (100 rows). */
        private static final int MAX_UNSENT = 60;
        private static final Duration MUCH_LATER = Duration.ofHours(1);

        private final long seed;
        private final Random random;
        private final OutboxStore[] claimers;
        private final ClaimBatch[] open;
        private final ClaimRuleModel model;
        /** Claims that took rows beside another open batch; that the rule kept a row back from; that a retry or parked row did. */
        private final int[] seen;
        private final ParkingPolicy policy;
        /** Aggregates new rows are written to; one whose row waits much later for its retry is swapped for a new one. */
        private final List<String> aggregates = new ArrayList<>();
        private int step;

        ClaimHistory(long seed, OutboxStore[] claimers, ClaimRuleModel model, int[] seen) {
            this.seed = seed;
            this.model = model;
            this.seen = seen;
            this.random = new Random(seed);
            this.claimers = claimers;
            this.open = new ClaimBatch[claimers.length];
            this.policy = random.nextBoolean() ? ParkingPolicy.HOLD_AGGREGATE : ParkingPolicy.CONTINUE_AGGREGATE;
            for (int i = 0; i < 4; i++) {
                aggregates.add(anAggregateId());
            }
        }

        void run(int steps) {
            for (step = 0; step < steps; step++) {
                int dice = random.nextInt(100);
                if (dice < 25 && model.unsent() < MAX_UNSENT) {
                    write();
                } else if (dice < 60) {
                    claim(random.nextInt(claimers.length));
                } else if (dice < 95) {
                    resolve(random.nextInt(claimers.length));
                } else {
                    replay();
                }
            }
            for (int claimer = 0; claimer < claimers.length; claimer++) {
                resolve(claimer);
            }
            // Drained by one claimer that sends everything: the rule still holds at every claim.
            for (int round = 0; round < 200; round++, step++) {
                if (claim(0).isEmpty()) {
                    break;
                }
                sendAll(0);
            }
            BacklogStats stats = store.stats();
            assertThat(stats.pending()).as(where("pending rows after the drain"))
                    .isEqualTo(model.count(ClaimRuleModel.State.READY) + model.count(ClaimRuleModel.State.BACKOFF));
            assertThat(stats.parked()).as(where("parked rows after the drain")).isEqualTo(model.count(ClaimRuleModel.State.PARKED));
        }

        private void write() {
            List<OutboxEvent> events = new ArrayList<>();
            for (int i = 1 + random.nextInt(3); i > 0; i--) {
                events.add(anEventFor(aggregates.get(random.nextInt(aggregates.size()))));
            }
            writeCommitted(events);
            events.forEach(e -> model.written(e.eventId(), e.aggregateId()));
        }

        private ClaimBatch claim(int claimer) {
            if (open[claimer] != null) {
                return open[claimer];
            }
            int maxRows = 1 + random.nextInt(8);
            List<UUID> expected = model.expectedClaim(maxRows, policy);
            String before = model.toString();
            ClaimBatch batch = claimers[claimer].claim(
                    aClaimRequest().by("claimer-" + claimer).forAtMost(maxRows).leasedFor(LONG_LEASE).parkingPolicy(policy).build());

            assertThat(ids(batch)).as(where("claimer " + claimer + ", maxRows " + maxRows + ", " + policy + ", rows before "
                    + before)).containsExactlyElementsOf(expected);
            if (batch.heldElsewhere()) {
                assertThat(Arrays.stream(open).anyMatch(Objects::nonNull))
                        .as(where("held elsewhere while no other batch is open")).isTrue();
            }
            for (ClaimedDelivery delivery : batch.deliveries()) {
                ClaimRuleModel.Row row = model.row(delivery.eventId());
                assertThat(delivery.attempts()).as(where("attempts of " + row)).isEqualTo(row.attempts);
                row.state = ClaimRuleModel.State.CLAIMED;
                row.claimer = claimer;
            }
            if (!batch.isEmpty()) {
                open[claimer] = batch;
                seen[0] += Arrays.stream(open).filter(Objects::nonNull).count() > 1 ? 1 : 0;
            }
            seen[1] += model.keptBack(maxRows, policy, false) ? 1 : 0;
            seen[2] += model.keptBack(maxRows, policy, true) ? 1 : 0;
            return batch;
        }

        /** Gives every row of the claimer's open batch an outcome, as the engine would: after a failure, the later rows of that aggregate are released. */
        private void resolve(int claimer) {
            ClaimBatch batch = open[claimer];
            if (batch == null) {
                return;
            }
            List<UUID> sent = new ArrayList<>();
            List<Reschedule> retried = new ArrayList<>();
            List<Park> parked = new ArrayList<>();
            List<UUID> released = new ArrayList<>();
            Set<String> stopped = new HashSet<>();
            for (ClaimedDelivery delivery : batch.deliveries()) {
                ClaimRuleModel.Row row = model.row(delivery.eventId());
                row.claimer = -1;
                int dice = stopped.contains(row.aggregate) ? 99 : random.nextInt(100);
                if (dice < 55) {
                    sent.add(row.id);
                    row.state = ClaimRuleModel.State.SENT;
                    continue;
                }
                stopped.add(row.aggregate);
                if (dice < 65) {
                    retried.add(new Reschedule(row.id, Duration.ZERO, "retried at once"));
                    row.state = ClaimRuleModel.State.READY;
                    row.attempts++;
                } else if (dice < 70) {
                    retried.add(new Reschedule(row.id, MUCH_LATER, "retried much later"));
                    row.state = ClaimRuleModel.State.BACKOFF;
                    row.attempts++;
                    if (aggregates.remove(row.aggregate)) {
                        aggregates.add(anAggregateId());
                    }
                } else if (dice < 80) {
                    parked.add(new Park(row.id, "parked"));
                    row.state = ClaimRuleModel.State.PARKED;
                    row.attempts++;
                } else {
                    released.add(row.id);
                    row.state = ClaimRuleModel.State.READY;
                }
            }
            List<Runnable> outcomes = new ArrayList<>();
            OutboxStore claimerStore = claimers[claimer];
            LeaseToken lease = batch.lease();
            outcomes.add(() -> assertThat(claimerStore.markSent(lease, sent)).as(where("marked sent")).isEqualTo(sent.size()));
            outcomes.add(() -> assertThat(claimerStore.reschedule(lease, retried)).as(where("rescheduled")).isEqualTo(retried.size()));
            outcomes.add(() -> assertThat(claimerStore.park(lease, parked)).as(where("parked")).isEqualTo(parked.size()));
            outcomes.add(() -> assertThat(claimerStore.release(lease, released)).as(where("released")).isEqualTo(released.size()));
            Collections.shuffle(outcomes, random);
            outcomes.forEach(Runnable::run);
            open[claimer] = null;
        }

        private void sendAll(int claimer) {
            ClaimBatch batch = open[claimer];
            assertThat(claimers[claimer].markSent(batch.lease(), ids(batch))).as(where("marked sent")).isEqualTo(batch.size());
            batch.deliveries().forEach(d -> {
                ClaimRuleModel.Row row = model.row(d.eventId());
                row.state = ClaimRuleModel.State.SENT;
                row.claimer = -1;
            });
            open[claimer] = null;
        }

        private void replay() {
            List<String> withParked = model.aggregatesWith(ClaimRuleModel.State.PARKED);
            if (withParked.isEmpty()) {
                return;
            }
            String aggregate = withParked.get(random.nextInt(withParked.size()));
            List<ClaimRuleModel.Row> rows = model.parkedOf(aggregate);
            assertThat(store.replay(ReplaySelector.aggregate(AGGREGATE_TYPE, aggregate))).as(where("replayed")).isEqualTo(rows.size());
            rows.forEach(row -> {
                row.state = ClaimRuleModel.State.READY;
                row.attempts = 0;
            });
        }

        private String where(String what) {
            return "seed " + seed + ", step " + step + ": " + what;
        }
    }

    // ----------------------------------------------------------------------------------- leases

    @Test
    final void aLiveLeaseIsNotReclaimed() {
        writeCommitted(List.of(anEvent()));
        store.claim(aClaimRequest().leasedFor(LONG_LEASE).build());

        ClaimBatch byAnotherRelay = secondStoreOnSameOutbox().claim(aClaimRequest().by("other-relay").build());

        assertThat(byAnotherRelay.isEmpty()).isTrue();
        assertThat(store.stats().leased()).isEqualTo(1);
    }

    @Test
    final void anExpiredLeaseIsReclaimedByAnotherClaimer() {
        OutboxEvent event = anEvent();
        writeCommitted(List.of(event));
        ClaimBatch first = store.claim(aClaimRequest().leasedFor(SHORT_LEASE).build());

        ClaimBatch reclaimed = awaitClaim(secondStoreOnSameOutbox(), aClaimRequest().by("other-relay"));

        assertThat(events(reclaimed)).containsExactly(event);
        assertThat(reclaimed.lease()).isNotEqualTo(first.lease());
        assertThat(reclaimed.deliveries().get(0).attempts()).as("a claim is not an attempt").isZero();
    }

    @Test
    final void aStaleClaimerChangesNothingAfterItsRowsWereReclaimed() {
        OutboxEvent event = anEvent();
        writeCommitted(List.of(event));
        ClaimBatch stale = store.claim(aClaimRequest().leasedFor(SHORT_LEASE).build());
        OutboxStore otherRelay = secondStoreOnSameOutbox();
        ClaimBatch current = awaitClaim(otherRelay, aClaimRequest().by("other-relay"));
        List<UUID> ids = List.of(event.eventId());

        assertThat(store.markSent(stale.lease(), ids)).isZero();
        assertThat(store.reschedule(stale.lease(), List.of(new Reschedule(event.eventId(), Duration.ZERO, "x")))).isZero();
        assertThat(store.park(stale.lease(), List.of(new Park(event.eventId(), "x")))).isZero();
        assertThat(store.release(stale.lease(), ids)).isZero();
        assertThat(store.renew(stale.lease(), LONG_LEASE)).isZero();

        BacklogStats stats = store.stats();
        assertThat(stats.pending()).isEqualTo(1);
        assertThat(stats.leased()).as("still leased by the current claimer").isEqualTo(1);
        assertThat(stats.parked()).isZero();
        assertThat(otherRelay.markSent(current.lease(), ids)).as("by the relay that claimed them").isEqualTo(1);
    }

    @Test
    final void anExpiredLeaseThatNobodyReclaimedStillAcceptsItsToken() {
        OutboxEvent sent = anEvent();
        OutboxEvent released = anEvent();
        writeCommitted(List.of(sent, released));
        ClaimBatch batch = store.claim(aClaimRequest().leasedFor(SHORT_LEASE).build());

        awaitUntil(() -> store.stats().leased() == 0);

        if (!anExpiredClaimKeepsItsToken()) {
            assertThat(store.markSent(batch.lease(), List.of(sent.eventId()))).as("the claim ended with its lease")
                    .isZero();
            assertThat(store.release(batch.lease(), List.of(released.eventId()))).isZero();
            assertThat(events(store.claim(aClaimRequest().build()))).containsExactly(sent, released);
            return;
        }
        assertThat(store.markSent(batch.lease(), List.of(sent.eventId()))).isEqualTo(1);
        assertThat(store.release(batch.lease(), List.of(released.eventId()))).isEqualTo(1);
        assertThat(events(store.claim(aClaimRequest().build()))).containsExactly(released);
    }

    @Test
    final void renewExtendsTheLease() {
        writeCommitted(List.of(anEvent(), anEvent()));
        ClaimBatch batch = store.claim(aClaimRequest().leasedFor(SHORT_LEASE).build());

        assertThat(store.renew(batch.lease(), LONG_LEASE)).isEqualTo(2);

        pause(SHORT_LEASE.multipliedBy(2));
        assertThat(secondStoreOnSameOutbox().claim(aClaimRequest().by("other-relay").build()).isEmpty()).isTrue();
        assertThat(store.stats().leased()).isEqualTo(2);
        assertThat(store.renew(LeaseToken.random(), LONG_LEASE)).as("an unknown token renews nothing").isZero();
    }

    @Test
    final void twoConcurrentClaimersNeverGetTheSameRow() throws Exception {
        List<OutboxEvent> events = interleavedEvents(20, 10);
        writeCommitted(events);
        OutboxStore[] stores = {store, secondStoreOnSameOutbox()};
        Map<UUID, Integer> claims = new ConcurrentHashMap<>();
        AtomicInteger sent = new AtomicInteger();
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try {
            List<Future<Integer>> claimed = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                OutboxStore claimer = stores[i];
                String owner = "relay-" + i;
                claimed.add(threads.submit((Callable<Integer>) () -> {
                    start.await();
                    int count = 0;
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                    while (sent.get() < events.size() && System.nanoTime() < deadline) {
                        ClaimBatch batch = claimer.claim(aClaimRequest().by(owner).forAtMost(7).build());
                        for (ClaimedDelivery delivery : batch.deliveries()) {
                            claims.merge(delivery.eventId(), 1, Integer::sum);
                        }
                        count += batch.size();
                        sent.addAndGet(claimer.markSent(batch.lease(), ids(batch)));
                    }
                    return count;
                }));
            }
            start.countDown();
            int total = 0;
            for (Future<Integer> future : claimed) {
                total += future.get(40, TimeUnit.SECONDS);
            }

            assertThat(claims.values()).as("claims per row").containsOnly(1);
            assertThat(claims.keySet()).containsExactlyInAnyOrderElementsOf(
                    events.stream().map(OutboxEvent::eventId).toList());
            assertThat(total).isEqualTo(events.size());
            assertThat(sent.get()).isEqualTo(events.size());
        } finally {
            threads.shutdownNow();
        }
    }

    // ----------------------------------------------------------------------------------- visibility

    @Test
    final void aRowCommittedAfterALaterRowWasSentIsStillDelivered() {
        OutboxEvent early = anEvent();
        OutboxEvent late = anEvent();
        UncommittedWrite earlyWrite = beginUncommittedWrite(early);
        boolean committed = false;
        try {
            writeCommitted(List.of(late));

            ClaimBatch beforeCommit = store.claim(aClaimRequest().build());
            assertThat(events(beforeCommit)).as("the uncommitted row is invisible").containsExactly(late);
            sendAll(beforeCommit);

            earlyWrite.commit();
            committed = true;
        } finally {
            if (!committed) {
                earlyWrite.rollback();
            }
        }

        ClaimBatch afterCommit = store.claim(aClaimRequest().build());
        assertThat(events(afterCommit)).containsExactly(early);
        assertThat(afterCommit.deliveries().get(0).sequence())
                .as("the early row took its sequence before the late row: the seed's out-of-order commit")
                .isLessThan(sequenceOfSent(late));
        assertThat(store.markSent(afterCommit.lease(), ids(afterCommit))).isEqualTo(1);
    }

    /**
     * Issue 11: the earlier event of an aggregate is still uncommitted when a later event of the same
     * aggregate is written and committed by another transaction. A store may block the later write until the
     * earlier transaction ends (PostgreSQL's per-aggregate lock) or hold the later row back while the
     * earlier one is uncommitted (the in-memory store, SQL Server's claim); either way no claim may return the
     * later event while the earlier one is open, and once both are committed the earlier one comes first and
     * the later one waits while the earlier one is leased by another claimer.
     */
    @Test
    final void aLaterEventOfAnAggregateWaitsForAnEarlierOneThatIsStillUncommitted() throws Exception {
        String aggregate = anAggregateId();
        OutboxEvent early = anEventFor(aggregate, 1);
        OutboxEvent late = anEventFor(aggregate, 2);
        ExecutorService application = Executors.newSingleThreadExecutor();
        UncommittedWrite earlyWrite = beginUncommittedWrite(early);
        boolean ended = false;
        try {
            Future<?> lateWrite = application.submit(() -> writeCommitted(List.of(late)));
            // A store that lets the later write through commits it at once; one that blocks it keeps it waiting.
            awaitDoneOrElapsed(lateWrite, WRITE_SETTLES);

            ClaimBatch byFirst = store.claim(aClaimRequest().build());
            ClaimBatch bySecond = secondStoreOnSameOutbox().claim(aClaimRequest().by("other-relay").build());
            assertThat(events(byFirst)).as("claimed while the earlier event of the aggregate is uncommitted")
                    .doesNotContain(late);
            assertThat(events(bySecond)).as("claimed by a second relay while the earlier event is uncommitted")
                    .doesNotContain(late);

            earlyWrite.commit();
            ended = true;
            lateWrite.get(10, TimeUnit.SECONDS);
        } finally {
            if (!ended) {
                earlyWrite.rollback();
            }
            application.shutdownNow();
        }

        ClaimBatch first = store.claim(aClaimRequest().forAtMost(1).build());
        assertThat(events(first)).as("the earlier event comes first").containsExactly(early);
        assertThat(secondStoreOnSameOutbox().claim(aClaimRequest().by("other-relay").build()).isEmpty())
                .as("the later event waits while the earlier one is leased by another relay").isTrue();
        assertThat(store.markSent(first.lease(), ids(first))).isEqualTo(1);
        ClaimBatch second = secondStoreOnSameOutbox().claim(aClaimRequest().by("other-relay").build());
        assertThat(events(second)).containsExactly(late);
        assertThat(second.deliveries().get(0).sequence()).isGreaterThan(first.deliveries().get(0).sequence());
    }

    @Test
    final void aLaterEventOfAnAggregateIsClaimableOnceTheEarlierWriteRolledBack() throws Exception {
        String aggregate = anAggregateId();
        OutboxEvent rolledBack = anEventFor(aggregate, 1);
        OutboxEvent late = anEventFor(aggregate, 2);
        ExecutorService application = Executors.newSingleThreadExecutor();
        UncommittedWrite earlyWrite = beginUncommittedWrite(rolledBack);
        try {
            Future<?> lateWrite = application.submit(() -> writeCommitted(List.of(late)));
            awaitDoneOrElapsed(lateWrite, WRITE_SETTLES);
            earlyWrite.rollback();
            lateWrite.get(10, TimeUnit.SECONDS);
        } finally {
            application.shutdownNow();
        }

        assertThat(events(store.claim(aClaimRequest().build()))).containsExactly(late);
    }

    @Test
    final void aRolledBackWriteIsNeverClaimed() {
        beginUncommittedWrite(anEvent()).rollback();

        assertThat(store.claim(aClaimRequest().build()).isEmpty()).isTrue();
        assertThat(store.timeUntilNextDue()).isEmpty();
    }

    // ----------------------------------------------------------------------------------- retries, parking

    @Test
    final void rescheduleCountsTheAttemptAndKeepsTheReason() {
        OutboxEvent event = anEvent();
        writeCommitted(List.of(event));

        ClaimBatch first = store.claim(aClaimRequest().build());
        assertThat(store.reschedule(first.lease(),
                List.of(new Reschedule(event.eventId(), Duration.ZERO, "timeout 1")))).isEqualTo(1);
        ClaimBatch second = awaitClaim(store, aClaimRequest());
        assertThat(second.deliveries().get(0).attempts()).isEqualTo(1);
        store.reschedule(second.lease(), List.of(new Reschedule(event.eventId(), Duration.ZERO, "timeout 2")));
        ClaimBatch third = awaitClaim(store, aClaimRequest());
        assertThat(third.deliveries().get(0).attempts()).isEqualTo(2);
        store.park(third.lease(), List.of(new Park(event.eventId(), "too large")));

        assertThat(store.parked(ReplaySelector.allParked(), 10)).singleElement().satisfies(parked -> {
            assertThat(parked.event()).isEqualTo(event);
            assertThat(parked.attempts()).isEqualTo(3);
            assertThat(parked.lastError()).isEqualTo("too large");
        });
    }

    /**
     * A row no event can be made of never fails the claim that takes it (it would fail every claim, and its
     * batch-mates would never be delivered): it is parked at claim, and the claim still answers a full batch
     * while claimable rows wait, since an empty or short batch tells the engine there is no more work.
     */
    @Test
    final void aRowNoEventCanBeMadeOfIsParkedAtClaimAndTheBatchIsStillFilled() {
        String poisoned = anAggregateId();
        Optional<UUID> bad = writeCommittedRowNoEventCanBeMadeOf(poisoned);
        Assumptions.assumeTrue(bad.isPresent(), "this store holds only rows that are events");
        OutboxEvent behind = anEventFor(poisoned);
        OutboxEvent first = anEvent();
        OutboxEvent second = anEvent();
        writeCommitted(List.of(behind, first, second));

        ClaimBatch batch = store.claim(aClaimRequest().forAtMost(2).build());

        assertThat(events(batch)).containsExactly(first, second);
        assertThat(store.parked(ReplaySelector.allParked(), 10)).extracting(p -> p.event().eventId())
                .containsExactly(bad.get());
        assertThat(store.claim(aClaimRequest().build()).isEmpty()).as("held by the parked row").isTrue();
        assertThat(events(store.claim(aClaimRequest().continuingPastParked().build()))).containsExactly(behind);
    }

    @Test
    final void aParkedRowIsNotClaimable() {
        OutboxEvent event = anEvent();
        writeCommitted(List.of(event));
        ClaimBatch batch = store.claim(aClaimRequest().build());

        assertThat(store.park(batch.lease(), List.of(new Park(event.eventId(), "rejected")))).isEqualTo(1);

        assertThat(store.claim(aClaimRequest().build()).isEmpty()).isTrue();
        assertThat(store.claim(aClaimRequest().continuingPastParked().build()).isEmpty()).isTrue();
        assertThat(store.claim(aClaimRequest().withoutOrdering().build()).isEmpty()).isTrue();
        BacklogStats stats = store.stats();
        assertThat(stats.parked()).isEqualTo(1);
        assertThat(stats.pending()).isZero();
    }

    @Test
    final void aParkedRowHoldsItsAggregateUnderHoldAggregate() {
        String aggregate = anAggregateId();
        List<OutboxEvent> events = eventsFor(aggregate, 2);
        OutboxEvent other = anEvent();
        writeCommitted(List.of(events.get(0), events.get(1), other));
        parkFirstRow(events.get(0));

        assertThat(events(store.claim(aClaimRequest().build()))).containsExactly(other);
    }

    /**
     * ClaimBatch heldElsewhere slows the engine's polling: a store may say it only while another claim holds rows,
     * never for rows that wait behind a parked head, which no claim's end frees (new rows would wait longer).
     */
    @Test
    final void rowsBehindAParkedHeadAreNotHeldElsewhere() {
        List<OutboxEvent> events = eventsFor(anAggregateId(), 2);
        writeCommitted(events);
        parkFirstRow(events.get(0));

        ClaimBatch batch = store.claim(aClaimRequest().build());

        assertThat(batch.isEmpty()).isTrue();
        assertThat(batch.heldElsewhere()).isFalse();
    }

    @Test
    final void aParkedRowLetsItsAggregateContinueUnderContinueAggregate() {
        List<OutboxEvent> events = eventsFor(anAggregateId(), 3);
        writeCommitted(events);
        parkFirstRow(events.get(0));

        assertThat(events(store.claim(aClaimRequest().continuingPastParked().build())))
                .containsExactlyElementsOf(events.subList(1, 3));
    }

    @Test
    final void parkedListsMatchingRowsInSequenceOrderUpToTheLimit() {
        String aggregate = anAggregateId();
        List<OutboxEvent> events = eventsFor(aggregate, 3);
        OutboxEvent other = anEvent();
        writeCommitted(List.of(events.get(0), events.get(1), events.get(2), other));
        ClaimBatch batch = store.claim(aClaimRequest().build());
        store.park(batch.lease(), batch.deliveries().stream().map(d -> new Park(d.eventId(), "rejected")).toList());

        assertThat(store.parked(ReplaySelector.allParked(), 10)).extracting(ParkedEvent::event)
                .containsExactly(events.get(0), events.get(1), events.get(2), other);
        assertThat(store.parked(ReplaySelector.allParked(), 2)).extracting(ParkedEvent::event)
                .containsExactly(events.get(0), events.get(1));
        assertThat(store.parked(ReplaySelector.aggregate(other.aggregateType(), other.aggregateId()), 10))
                .extracting(ParkedEvent::event).containsExactly(other);
        assertThat(store.parked(ReplaySelector.events(Set.of(events.get(1).eventId())), 10))
                .extracting(ParkedEvent::event).containsExactly(events.get(1));
    }

    @Test
    final void aCappedParkedListReadsAtMostThatManyPayloadBytesAndTheEventOtherwiseUnchanged() {
        List<OutboxEvent> events = eventsFor(anAggregateId(), 2);
        writeCommitted(events);
        ClaimBatch batch = store.claim(aClaimRequest().build());
        store.park(batch.lease(), batch.deliveries().stream().map(d -> new Park(d.eventId(), "too large")).toList());
        int cap = 10;
        assertThat(events).allSatisfy(event -> assertThat(event.payload().length).isGreaterThan(cap));
        ReplaySelector selector = ReplaySelector.events(Set.of(events.get(0).eventId(), events.get(1).eventId()));

        List<ParkedEvent> capped = store.parked(selector, 10, cap);

        assertThat(capped).extracting(ParkedEvent::event).containsExactly(
                withPayload(events.get(0), Arrays.copyOf(events.get(0).payload(), cap)),
                withPayload(events.get(1), Arrays.copyOf(events.get(1).payload(), cap)));
        assertThat(capped).extracting(ParkedEvent::payloadBytes).as("the whole payload's length")
                .containsExactly(events.get(0).payload().length, events.get(1).payload().length);
        List<ParkedEvent> whole = store.parked(selector, 10);
        assertThat(capped).extracting(ParkedEvent::sequence, ParkedEvent::attempts, ParkedEvent::lastError,
                        ParkedEvent::createdAt)
                .containsExactlyElementsOf(whole.stream().map(p -> org.assertj.core.groups.Tuple.tuple(p.sequence(),
                        p.attempts(), p.lastError(), p.createdAt())).toList());
        assertThat(store.parked(selector, 10, 0)).as("no payload at all")
                .allSatisfy(row -> assertThat(row.event().payload()).isEmpty());
        assertThat(store.parked(selector, 1, 1 << 20)).extracting(ParkedEvent::event)
                .as("a cap above the payload leaves it whole").containsExactly(events.get(0));
        ReplaySelector aggregate = ReplaySelector.aggregate(events.get(0).aggregateType(), events.get(0).aggregateId());
        for (ReplaySelector other : List.of(aggregate, ReplaySelector.allParked())) {
            assertThat(store.parked(other, 10, cap)).as(other.toString()).isEqualTo(capped);
        }
    }

    private static OutboxEvent withPayload(OutboxEvent event, byte[] payload) {
        return new OutboxEvent(event.eventId(), event.aggregateType(), event.aggregateId(), event.eventType(),
                event.destination(), payload, event.contentType(), event.headers());
    }

    @Test
    final void replayMakesParkedRowsPendingAndDueNowWithAttemptsReset() {
        String aggregate = anAggregateId();
        List<OutboxEvent> events = eventsFor(aggregate, 2);
        OutboxEvent stillParked = anEvent();
        writeCommitted(List.of(events.get(0), events.get(1), stillParked));
        ClaimBatch batch = store.claim(aClaimRequest().forAtMost(1).build());
        store.reschedule(batch.lease(), List.of(new Reschedule(events.get(0).eventId(), Duration.ZERO, "timeout")));
        ClaimBatch again = awaitClaim(store, aClaimRequest());
        store.park(again.lease(), List.of(new Park(events.get(0).eventId(), "rejected"),
                new Park(stillParked.eventId(), "rejected")));
        store.release(again.lease(), List.of(events.get(1).eventId()));

        int replayed = store.replay(ReplaySelector.aggregate(events.get(0).aggregateType(), aggregate));

        assertThat(replayed).isEqualTo(1);
        assertThat(store.parked(ReplaySelector.allParked(), 10)).extracting(ParkedEvent::event)
                .containsExactly(stillParked);
        ClaimBatch replay = store.claim(aClaimRequest().build());
        assertThat(events(replay)).containsExactlyElementsOf(events);
        assertThat(replay.deliveries().get(0).attempts()).isZero();
        assertThat(store.replay(ReplaySelector.events(Set.of(events.get(0).eventId()))))
                .as("a pending row is not replayed").isZero();
    }

    // ----------------------------------------------------------------------------------- housekeeping

    @Test
    final void purgeDeletesOnlySentRowsOlderThanTheRetentionInBoundedBatches() {
        List<OutboxEvent> old = List.of(anEvent(), anEvent(), anEvent());
        writeCommitted(old);
        sendAll(store.claim(aClaimRequest().build()));
        pause(Duration.ofMillis(600));
        List<OutboxEvent> recent = List.of(anEvent(), anEvent());
        OutboxEvent pending = anEvent();
        OutboxEvent parked = anEvent();
        writeCommitted(recent);
        sendAll(store.claim(aClaimRequest().build()));
        writeCommitted(List.of(pending, parked));
        ClaimBatch toPark = store.claim(aClaimRequest().build());
        store.park(toPark.lease(), List.of(new Park(parked.eventId(), "rejected")));
        store.release(toPark.lease(), List.of(pending.eventId()));
        Duration retention = Duration.ofMillis(300);

        if (deletesSentRows()) {
            assertThat(store.purgeSent(retention, 2)).isZero();
        } else {
            assertThat(store.purgeSent(retention, 2)).isEqualTo(2);
            assertThat(store.purgeSent(retention, 2)).isEqualTo(1);
            assertThat(store.purgeSent(retention, 2)).isZero();
            assertThat(store.purgeSent(Duration.ZERO, 10)).as("the recent sent rows were kept").isEqualTo(2);
        }
        assertThat(store.purgeSent(Duration.ZERO, 10)).isZero();
        BacklogStats stats = store.stats();
        assertThat(stats.pending()).as("pending rows are never purged").isEqualTo(1);
        assertThat(stats.parked()).as("parked rows are never purged").isEqualTo(1);
    }

    @Test
    final void timeUntilNextDueIsEmptyWithoutPendingRows() {
        assertThat(store.timeUntilNextDue()).isEmpty();

        writeCommitted(List.of(anEvent()));
        sendAll(store.claim(aClaimRequest().build()));

        assertThat(store.timeUntilNextDue()).isEmpty();
    }

    @Test
    final void timeUntilNextDueIsZeroWhenARowIsClaimable() {
        writeCommitted(List.of(anEvent()));

        assertThat(store.timeUntilNextDue()).contains(Duration.ZERO);
    }

    @Test
    final void timeUntilNextDueIsTheDelayOfTheEarliestRetry() {
        OutboxEvent soon = anEvent();
        OutboxEvent later = anEvent();
        writeCommitted(List.of(soon, later));
        ClaimBatch batch = store.claim(aClaimRequest().build());
        store.reschedule(batch.lease(), List.of(new Reschedule(later.eventId(), Duration.ofSeconds(20), "x"),
                new Reschedule(soon.eventId(), Duration.ofSeconds(10), "x")));

        assertThat(store.timeUntilNextDue()).hasValueSatisfying(untilDue ->
                assertThat(untilDue).isBetween(Duration.ofSeconds(8), Duration.ofSeconds(10)));
    }

    @Test
    final void timeUntilNextDueIsTheRemainingLeaseOfALeasedRow() {
        writeCommitted(List.of(anEvent()));
        store.claim(aClaimRequest().leasedFor(LONG_LEASE).build());

        assertThat(store.timeUntilNextDue()).hasValueSatisfying(untilDue ->
                assertThat(untilDue).isBetween(LONG_LEASE.minusSeconds(2), LONG_LEASE));
    }

    @Test
    final void statsCountPendingLeasedAndParkedRows() {
        assertThat(store.stats()).isEqualTo(new BacklogStats(0, 0, 0, Optional.empty()));

        List<OutboxEvent> events = List.of(anEvent(), anEvent(), anEvent(), anEvent(), anEvent());
        writeCommitted(events);
        ClaimBatch toSend = store.claim(aClaimRequest().forAtMost(1).build());
        sendAll(toSend);
        ClaimBatch toPark = store.claim(aClaimRequest().forAtMost(1).build());
        store.park(toPark.lease(), List.of(new Park(toPark.deliveries().get(0).eventId(), "rejected")));
        store.claim(aClaimRequest().forAtMost(1).build());

        BacklogStats stats = store.stats();
        assertThat(stats.pending()).as("pending, leased ones included").isEqualTo(3);
        assertThat(stats.leased()).isEqualTo(1);
        assertThat(stats.parked()).isEqualTo(1);
        assertThat(stats.oldestPendingAge()).hasValueSatisfying(age ->
                assertThat(age).isGreaterThanOrEqualTo(Duration.ZERO).isLessThan(Duration.ofMinutes(1)));
    }

    // ----------------------------------------------------------------------------------- helpers

    /** The events of a batch, in batch order. */
    protected static List<OutboxEvent> events(ClaimBatch batch) {
        return batch.deliveries().stream().map(ClaimedDelivery::event).toList();
    }

    /** The event ids of a batch, in batch order. */
    protected static List<UUID> ids(ClaimBatch batch) {
        return batch.deliveries().stream().map(ClaimedDelivery::eventId).toList();
    }

    private static List<Long> sequences(ClaimBatch batch) {
        return batch.deliveries().stream().map(ClaimedDelivery::sequence).toList();
    }

    private void sendAll(ClaimBatch batch) {
        batch.deliveries().forEach(d -> sentSequences.put(d.eventId(), d.sequence()));
        assertThat(store.markSent(batch.lease(), ids(batch))).isEqualTo(batch.size());
    }

    private long sequenceOfSent(OutboxEvent event) {
        Long sequence = sentSequences.get(event.eventId());
        assertThat(sequence).as("sequence of sent event " + event.eventId()).isNotNull();
        return sequence;
    }

    private void parkFirstRow(OutboxEvent first) {
        ClaimBatch batch = store.claim(aClaimRequest().forAtMost(1).build());
        assertThat(events(batch)).containsExactly(first);
        store.park(batch.lease(), List.of(new Park(first.eventId(), "rejected")));
    }

    /** Claims until a claim returns rows, for scenarios waiting on the store's clock. */
    private static ClaimBatch awaitClaim(OutboxStore claimer, ClaimRequestBuilder request) {
        ClaimBatch[] found = new ClaimBatch[1];
        waiting().until(() -> {
            ClaimBatch batch = claimer.claim(request.build());
            found[0] = batch;
            return !batch.isEmpty();
        });
        return found[0];
    }

    /** Waits until {@code task} is done or {@code limit} has passed, whichever comes first. */
    private static void awaitDoneOrElapsed(Future<?> task, Duration limit) {
        long deadline = System.nanoTime() + limit.toNanos();
        await().atMost(limit.plusSeconds(5)).pollInterval(Duration.ofMillis(10))
                .until(() -> task.isDone() || System.nanoTime() >= deadline);
    }

    private static void awaitUntil(Callable<Boolean> condition) {
        waiting().until(condition);
    }

    /** Lets real time pass, for scenarios that must show that nothing happens meanwhile. */
    private static void pause(Duration duration) {
        await().pollDelay(duration).atMost(duration.plusSeconds(5)).until(() -> true);
    }

    private static ConditionFactory waiting() {
        return await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20));
    }

}
