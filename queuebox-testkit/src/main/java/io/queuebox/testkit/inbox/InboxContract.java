package io.queuebox.testkit.inbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.queuebox.ports.Inbox;
import io.queuebox.ports.InboxHandler;
import io.queuebox.ports.InboxKey;
import io.queuebox.ports.InboxOutcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The behaviour every {@link Inbox} must show, as one suite of scenarios. Extend it once per inbox, with the
 * backend in the class name ({@code PostgresInboxTest extends InboxContract<Connection>}), and implement the
 * hooks:
 *
 * <ul>
 *   <li>{@link #newInboxOnEmptyTable()}: called before every test; an inbox on a fresh, empty table;</li>
 *   <li>{@link #begin()}, {@link #commit}, {@link #rollback}: a transaction of the backend, on its own
 *       connection, usable from any thread (the race scenarios run several at once);</li>
 *   <li>{@link #ageEveryEntry(Duration)}: makes every committed entry older by {@code age} on the inbox's
 *       clock (move a mutable clock; update the recorded time in SQL), so purge is tested without waiting.</li>
 * </ul>
 *
 * The suite's "business effect" is what the handlers of committed transactions did: a handler's effect is
 * kept only when its transaction commits, as a row written through the transaction would be.
 *
 * @param <T> the inbox's transaction handle
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
public abstract class InboxContract<T> {

    private static final String CONSUMER = "billing";
    private static final Duration SECOND_CONSUMER_HEAD_START = Duration.ofMillis(300);

    private Inbox<T> inbox;
    private final Map<T, List<String>> uncommittedEffects = Collections.synchronizedMap(new IdentityHashMap<>());
    private final List<String> effects = Collections.synchronizedList(new ArrayList<>());
    private final List<T> open = Collections.synchronizedList(new ArrayList<>());
    private ExecutorService threads;

    protected abstract Inbox<T> newInboxOnEmptyTable();

    protected abstract T begin();

    protected abstract void commit(T transaction);

    protected abstract void rollback(T transaction);

    protected abstract void ageEveryEntry(Duration age);

    @BeforeEach
    final void freshInbox() {
        inbox = newInboxOnEmptyTable();
        threads = Executors.newCachedThreadPool();
    }

    @AfterEach
    final void endLeftOverTransactions() {
        threads.shutdownNow();
        for (T transaction : List.copyOf(open)) {
            rollback(transaction);
        }
    }

    // ------------------------------------------------------------------------------------- processing

    @Test
    final void aNewEventRunsItsHandlerInTheCallersTransaction() throws Exception {
        T transaction = started();
        List<Object> seen = new ArrayList<>();
        InboxOutcome outcome = inbox.process(transaction, aKey(), tx -> seen.add(tx));
        committed(transaction);

        assertThat(outcome).isEqualTo(InboxOutcome.PROCESSED);
        assertThat(seen).hasSize(1).first().isSameAs(transaction);
    }

    @Test
    final void aRedeliveryAfterTheCommitIsADuplicateAndItsHandlerDoesNotRun() throws Exception {
        InboxKey key = aKey();
        assertThat(processCommitted(key, "first")).isEqualTo(InboxOutcome.PROCESSED);

        assertThat(processCommitted(key, "redelivered")).isEqualTo(InboxOutcome.DUPLICATE);
        assertThat(effects).containsExactly("first");
    }

    @Test
    final void theSameEventTwiceInOneTransactionRunsTheHandlerOnce() throws Exception {
        InboxKey key = aKey();
        T transaction = started();
        InboxOutcome first = inbox.process(transaction, key, effect(transaction, "first"));
        InboxOutcome second = inbox.process(transaction, key, effect(transaction, "second"));
        committed(transaction);

        assertThat(List.of(first, second)).containsExactly(InboxOutcome.PROCESSED, InboxOutcome.DUPLICATE);
        assertThat(effects).containsExactly("first");
    }

    @Test
    final void aCrashAfterTheBusinessWriteAndBeforeTheCommitLetsTheRedeliveryProcessTheEventOnce() throws Exception {
        InboxKey key = aKey();
        T crashed = started();
        assertThat(inbox.process(crashed, key, effect(crashed, "lost with the crash"))).isEqualTo(InboxOutcome.PROCESSED);
        rolledBack(crashed);

        assertThat(processCommitted(key, "redelivered")).isEqualTo(InboxOutcome.PROCESSED);
        assertThat(processCommitted(key, "redelivered again")).isEqualTo(InboxOutcome.DUPLICATE);
        assertThat(effects).containsExactly("redelivered");
    }

    @Test
    final void aHandlerExceptionIsThrownAsItIsAndTheRollbackForgetsTheEvent() throws Exception {
        InboxKey key = aKey();
        IllegalStateException failure = new IllegalStateException("handler failed");
        T transaction = started();
        assertThatThrownBy(() -> inbox.process(transaction, key, tx -> {
            effect(tx, "written before the failure").handle(tx);
            throw failure;
        })).isSameAs(failure);
        rolledBack(transaction);

        assertThat(processCommitted(key, "retried")).isEqualTo(InboxOutcome.PROCESSED);
        assertThat(effects).containsExactly("retried");
    }

    @Test
    final void eachConsumerProcessesAnEventOnce() throws Exception {
        UUID eventId = UUID.randomUUID();
        assertThat(processCommitted(new InboxKey("billing", eventId), "billing")).isEqualTo(InboxOutcome.PROCESSED);
        assertThat(processCommitted(new InboxKey("shipping", eventId), "shipping")).isEqualTo(InboxOutcome.PROCESSED);
        assertThat(processCommitted(new InboxKey("billing", eventId), "billing again")).isEqualTo(InboxOutcome.DUPLICATE);
        assertThat(effects).containsExactly("billing", "shipping");
    }

    @Test
    final void eventsOfOneConsumerAreKeptApart() throws Exception {
        assertThat(processCommitted(aKey(), "one")).isEqualTo(InboxOutcome.PROCESSED);
        assertThat(processCommitted(aKey(), "two")).isEqualTo(InboxOutcome.PROCESSED);
        assertThat(effects).containsExactly("one", "two");
    }

    // ------------------------------------------------------------------------------------- races

    @Test
    final void consumersRacingOnOneRedeliveredEventApplyItOnce() throws Exception {
        InboxKey key = aKey();
        int racers = 4;
        CyclicBarrier start = new CyclicBarrier(racers);
        List<Future<InboxOutcome>> outcomes = new ArrayList<>();
        for (int i = 0; i < racers; i++) {
            String name = "racer " + i;
            outcomes.add(threads.submit(() -> {
                T transaction = started();
                start.await(10, TimeUnit.SECONDS);
                InboxOutcome outcome = inbox.process(transaction, key, effect(transaction, name));
                committed(transaction);
                return outcome;
            }));
        }
        List<InboxOutcome> answers = new ArrayList<>();
        for (Future<InboxOutcome> outcome : outcomes) {
            answers.add(outcome.get(30, TimeUnit.SECONDS));
        }

        assertThat(answers).containsOnlyOnce(InboxOutcome.PROCESSED);
        assertThat(effects).hasSize(1);
    }

    @Test
    final void aConsumerWaitingOnAnotherTransactionsEntrySeesItsCommitAsADuplicate() throws Exception {
        InboxKey key = aKey();
        T first = started();
        inbox.process(first, key, effect(first, "first"));

        Future<InboxOutcome> second = secondConsumerProcessing(key, "second");
        committed(first);

        assertThat(second.get(30, TimeUnit.SECONDS)).isEqualTo(InboxOutcome.DUPLICATE);
        assertThat(effects).containsExactly("first");
    }

    @Test
    final void aConsumerWaitingOnAnotherTransactionsEntryProcessesTheEventWhenThatOneRollsBack() throws Exception {
        InboxKey key = aKey();
        T first = started();
        inbox.process(first, key, effect(first, "first"));

        Future<InboxOutcome> second = secondConsumerProcessing(key, "second");
        rolledBack(first);

        assertThat(second.get(30, TimeUnit.SECONDS)).isEqualTo(InboxOutcome.PROCESSED);
        assertThat(effects).containsExactly("second");
    }

    // ------------------------------------------------------------------------------------- purge

    @Test
    final void purgeDeletesOnlyEntriesOlderThanTheRetention() throws Exception {
        InboxKey old = aKey();
        processCommitted(old, "old");
        ageEveryEntry(Duration.ofHours(2));
        InboxKey recent = aKey();
        processCommitted(recent, "recent");

        assertThat(purgeCommitted(Duration.ofHours(1), 100)).isEqualTo(1);

        assertThat(processCommitted(recent, "recent again")).isEqualTo(InboxOutcome.DUPLICATE);
        // Purged: a redelivery now is processed again, which is why the retention must outlast redeliveries.
        assertThat(processCommitted(old, "old again")).isEqualTo(InboxOutcome.PROCESSED);
    }

    @Test
    final void purgeDeletesAtMostMaxEntriesPerCall() throws Exception {
        for (int i = 0; i < 5; i++) {
            processCommitted(aKey(), "event " + i);
        }
        ageEveryEntry(Duration.ofDays(8));

        List<Integer> deleted = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            deleted.add(purgeCommitted(Duration.ofDays(7), 2));
        }
        assertThat(deleted).containsExactly(2, 2, 1, 0);
    }

    @Test
    final void aRolledBackPurgeKeepsTheEntries() throws Exception {
        InboxKey key = aKey();
        processCommitted(key, "first");
        ageEveryEntry(Duration.ofDays(8));

        T transaction = started();
        assertThat(inbox.purge(transaction, Duration.ofDays(7), 10)).isEqualTo(1);
        rolledBack(transaction);

        assertThat(processCommitted(key, "redelivered")).isEqualTo(InboxOutcome.DUPLICATE);
    }

    @Test
    final void purgeRefusesANegativeRetentionAndABatchBelowOne() {
        T transaction = started();
        assertThatThrownBy(() -> inbox.purge(transaction, Duration.ofSeconds(-1), 10))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("retention");
        assertThatThrownBy(() -> inbox.purge(transaction, Duration.ofDays(7), 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxEntries");
        rolledBack(transaction);
    }

    // ------------------------------------------------------------------------------------- helpers

    private static InboxKey aKey() {
        return new InboxKey(CONSUMER, UUID.randomUUID());
    }

    private T started() {
        T transaction = begin();
        open.add(transaction);
        return transaction;
    }

    private void committed(T transaction) {
        commit(transaction);
        open.remove(transaction);
        List<String> done = uncommittedEffects.remove(transaction);
        if (done != null) {
            effects.addAll(done);
        }
    }

    private void rolledBack(T transaction) {
        rollback(transaction);
        open.remove(transaction);
        uncommittedEffects.remove(transaction);
    }

    /** A handler whose effect counts only if {@code transaction} commits, like a row it would write. */
    private InboxHandler<T> effect(T transaction, String what) {
        return tx -> {
            assertThat(tx).isSameAs(transaction);
            uncommittedEffects.computeIfAbsent(tx, t -> Collections.synchronizedList(new ArrayList<>())).add(what);
        };
    }

    private InboxOutcome processCommitted(InboxKey key, String what) throws Exception {
        T transaction = started();
        InboxOutcome outcome = inbox.process(transaction, key, effect(transaction, what));
        committed(transaction);
        return outcome;
    }

    private int purgeCommitted(Duration retention, int maxEntries) {
        T transaction = started();
        int deleted = inbox.purge(transaction, retention, maxEntries);
        committed(transaction);
        return deleted;
    }

    /** Another consumer processing {@code key} in its own transaction on another thread; it has started when this returns. */
    private Future<InboxOutcome> secondConsumerProcessing(InboxKey key, String what) throws InterruptedException {
        CountDownLatch started = new CountDownLatch(1);
        Future<InboxOutcome> outcome = threads.submit((Callable<InboxOutcome>) () -> {
            T transaction = started();
            started.countDown();
            InboxOutcome answer = inbox.process(transaction, key, effect(transaction, what));
            committed(transaction);
            return answer;
        });
        assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
        // Lets the second consumer reach the inbox while the first transaction is open. A correct inbox answers the
        // same either way, so this pause never decides a pass; it makes a check-then-record inbox fail reliably.
        Thread.sleep(SECOND_CONSUMER_HEAD_START.toMillis());
        return outcome;
    }
}
