package io.queuebox.testkit.contracts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectMethod;

import io.queuebox.ports.Inbox;
import io.queuebox.ports.InboxHandler;
import io.queuebox.ports.InboxKey;
import io.queuebox.ports.InboxOutcome;
import io.queuebox.testkit.MutableClock;
import io.queuebox.testkit.inbox.InMemoryInbox;
import io.queuebox.testkit.inbox.InboxContract;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;
import org.junit.platform.launcher.listeners.TestExecutionSummary;

/**
 * The inbox contract can fail: run against the two mistakes hand-written inboxes make most (checking for the
 * event, then recording it; recording it outside the business transaction), the scenario guarding each fails,
 * while the unbroken in-memory inbox passes the same scenarios.
 */
class InboxContractCatchesBrokenInboxesTest {

    private static final String WAITING_SEES_COMMIT = "aConsumerWaitingOnAnotherTransactionsEntrySeesItsCommitAsADuplicate";
    private static final String CRASH = "aCrashAfterTheBusinessWriteAndBeforeTheCommitLetsTheRedeliveryProcessTheEventOnce";

    @Test
    void theContractCatchesAnInboxThatChecksThenRecords() {
        assertFails(CheckingThenRecording.class, WAITING_SEES_COMMIT);
    }

    @Test
    void theContractCatchesAnInboxThatRecordsOutsideTheCallersTransaction() {
        assertFails(RecordingOutsideTheTransaction.class, CRASH);
    }

    @Test
    void theUnbrokenInMemoryInboxPassesTheSameScenarios() {
        assertPasses(BreakingNothing.class, WAITING_SEES_COMMIT);
        assertPasses(BreakingNothing.class, CRASH);
    }

    private static void assertFails(Class<?> contractRun, String scenario) {
        TestExecutionSummary summary = run(contractRun, scenario);
        assertThat(summary.getTestsStartedCount()).as("%s started", scenario).isEqualTo(1);
        assertThat(summary.getTestsFailedCount()).as("%s against %s failed", scenario, contractRun.getSimpleName())
                .isEqualTo(1);
        assertThat(summary.getFailures().get(0).getException())
                .as("failed on an assertion, not on set-up").isInstanceOf(AssertionError.class);
    }

    private static void assertPasses(Class<?> contractRun, String scenario) {
        assertThat(run(contractRun, scenario).getTestsSucceededCount())
                .as("%s against %s passed", scenario, contractRun.getSimpleName()).isEqualTo(1);
    }

    private static TestExecutionSummary run(Class<?> contractRun, String scenario) {
        LauncherDiscoveryRequest request = LauncherDiscoveryRequestBuilder.request()
                .selectors(selectMethod(contractRun, scenario))
                .configurationParameter(LAUNCHED_HERE, "true").build();
        SummaryGeneratingListener listener = new SummaryGeneratingListener();
        LauncherFactory.create().execute(request, listener);
        return listener.getSummary();
    }

    private static final String LAUNCHED_HERE = "queuebox.contracts.brokenInboxes";

    /** The broken inboxes run only in this test's own launches, never when a -Dtest pattern matches them. */
    static final class OnlyLaunchedHere implements ExecutionCondition {
        @Override
        public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
            return context.getConfigurationParameter(LAUNCHED_HERE).isPresent()
                    ? ConditionEvaluationResult.enabled("launched by InboxContractCatchesBrokenInboxesTest")
                    : ConditionEvaluationResult.disabled("a broken inbox, run only by InboxContractCatchesBrokenInboxesTest");
        }
    }

    @ExtendWith(OnlyLaunchedHere.class)
    abstract static class InMemoryRun extends InboxContract<InMemoryInbox.Transaction> {
        final MutableClock clock = MutableClock.create();
        InMemoryInbox inner;

        abstract Inbox<InMemoryInbox.Transaction> wrap(InMemoryInbox inbox);

        @Override
        protected Inbox<InMemoryInbox.Transaction> newInboxOnEmptyTable() {
            inner = new InMemoryInbox(clock);
            return wrap(inner);
        }

        @Override
        protected InMemoryInbox.Transaction begin() {
            return inner.begin();
        }

        @Override
        protected void commit(InMemoryInbox.Transaction transaction) {
            transaction.commit();
        }

        @Override
        protected void rollback(InMemoryInbox.Transaction transaction) {
            transaction.rollback();
        }

        @Override
        protected void ageEveryEntry(Duration age) {
            clock.advance(age);
        }
    }

    static class BreakingNothing extends InMemoryRun {
        @Override
        Inbox<InMemoryInbox.Transaction> wrap(InMemoryInbox inbox) {
            return inbox;
        }
    }

    /** Looks for a committed entry, runs the handler, then records: a second consumer slips between the two. */
    static class CheckingThenRecording extends InMemoryRun {
        @Override
        Inbox<InMemoryInbox.Transaction> wrap(InMemoryInbox inbox) {
            return new Inbox<>() {
                @Override
                public InboxOutcome process(InMemoryInbox.Transaction transaction, InboxKey key,
                        InboxHandler<InMemoryInbox.Transaction> handler) throws Exception {
                    if (inbox.contains(key)) {
                        return InboxOutcome.DUPLICATE;
                    }
                    handler.handle(transaction);
                    inbox.process(transaction, key, tx -> { });
                    return InboxOutcome.PROCESSED;
                }

                @Override
                public int purge(InMemoryInbox.Transaction transaction, Duration retention, int maxEntries) {
                    return inbox.purge(transaction, retention, maxEntries);
                }
            };
        }
    }

    /** Records and commits the entry on its own, then runs the handler: a crash before the commit loses the event. */
    static class RecordingOutsideTheTransaction extends InMemoryRun {
        @Override
        Inbox<InMemoryInbox.Transaction> wrap(InMemoryInbox inbox) {
            return new Inbox<>() {
                @Override
                public InboxOutcome process(InMemoryInbox.Transaction transaction, InboxKey key,
                        InboxHandler<InMemoryInbox.Transaction> handler) throws Exception {
                    InMemoryInbox.Transaction own = inbox.begin();
                    InboxOutcome outcome = inbox.process(own, key, tx -> { });
                    own.commit();
                    if (outcome == InboxOutcome.PROCESSED) {
                        handler.handle(transaction);
                    }
                    return outcome;
                }

                @Override
                public int purge(InMemoryInbox.Transaction transaction, Duration retention, int maxEntries) {
                    return inbox.purge(transaction, retention, maxEntries);
                }
            };
        }
    }
}
