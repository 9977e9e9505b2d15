package io.queuebox.testkit.contracts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectMethod;

import io.queuebox.ports.BacklogStats;
import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.Park;
import io.queuebox.ports.ParkedEvent;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.ports.ReplaySelector;
import io.queuebox.ports.Reschedule;
import io.queuebox.testkit.outbox.InMemoryOutboxStore;
import io.queuebox.testkit.outbox.OutboxStoreContract;
import io.queuebox.testkit.publisher.MessagePublisherContract;
import io.queuebox.testkit.publisher.ReceivedMessage;
import io.queuebox.testkit.publisher.RecordingPublisher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.function.BiFunction;
import java.util.function.Function;
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
 * The contract suites are tests too: run against adapters broken on purpose, the scenario that guards the
 * broken behaviour must fail. (The broken adapters are nested classes, which Surefire does not run itself.)
 */
class ContractsCatchBrokenAdaptersTest {

    @Test
    void theStoreContractCatchesAStoreThatIgnoresFencing() {
        assertFails(StoreIgnoringFencing.class, "aStaleClaimerChangesNothingAfterItsRowsWereReclaimed");
    }

    @Test
    void theStoreContractCatchesAStoreThatIgnoresOrdering() {
        assertFails(StoreIgnoringOrdering.class, "orderingKeepsAnAggregatesLaterRowUntilTheEarlierIsSent");
        assertFails(StoreIgnoringOrdering.class, "aRetryNeverLetsLaterRowsOfItsAggregateOvertakeIt");
        assertFails(StoreIgnoringOrdering.class, "aParkedRowHoldsItsAggregateUnderHoldAggregate");
        assertFails(StoreIgnoringOrdering.class, "randomHistoriesOfThreeClaimersGetExactlyWhatTheRuleAllowsAtEveryClaim");
    }

    @Test
    void theStoreContractCatchesUncommittedRowsBeingVisible() {
        assertFails(StoreWithoutTransactions.class, "aRowCommittedAfterALaterRowWasSentIsStillDelivered");
    }

    @Test
    void theStoreContractCatchesALaterEventOvertakingAnUncommittedEarlierOneOfItsAggregate() {
        assertFails(StoreIgnoringOpenWrites.class, "aLaterEventOfAnAggregateWaitsForAnEarlierOneThatIsStillUncommitted");
    }

    @Test
    void theStoreContractPassesTheUnbrokenStoreOnTheSameScenarios() {
        assertPasses(StoreIgnoringNothing.class, "aStaleClaimerChangesNothingAfterItsRowsWereReclaimed",
                "orderingKeepsAnAggregatesLaterRowUntilTheEarlierIsSent",
                "aRowCommittedAfterALaterRowWasSentIsStillDelivered",
                "aLaterEventOfAnAggregateWaitsForAnEarlierOneThatIsStillUncommitted",
                "aLaterEventOfAnAggregateIsClaimableOnceTheEarlierWriteRolledBack",
                "randomHistoriesOfThreeClaimersGetExactlyWhatTheRuleAllowsAtEveryClaim");
    }

    @Test
    void thePublisherContractCatchesAPublisherThatCarriesOnAfterAFailure() {
        assertFails(PublisherCarryingOnAfterFailure.class, "afterAFailedMessageLaterMessagesOfItsAggregateAreNotAttempted");
    }

    @Test
    void thePublisherContractCatchesAPublisherThatAcksWithoutABroker() {
        assertFails(PublisherAckingWithoutBroker.class, UNREACHABLE_SCENARIO);
    }

    @Test
    void thePublisherContractCatchesAPublisherThatChargesAnAttemptForAnOutage() {
        assertFails(PublisherChargingAnOutage.class, UNREACHABLE_SCENARIO);
    }

    @Test
    void thePublisherContractCatchesAPublisherThatWaitsOncePerAggregate() {
        assertFails(PublisherWaitingPerAggregate.class, UNREACHABLE_SCENARIO);
    }

    @Test
    void thePublisherContractCatchesAPublisherThatGivesUpTheBatchAfterOneFailure() {
        assertFails(PublisherGivingUpAfterOneFailure.class,
                "oneMissingDestinationAmongManyAggregatesLeavesEveryOtherAggregateAcked");
    }

    @Test
    void thePublisherContractPassesTheUnbrokenFakeOnTheSameScenarios() {
        assertPasses(PublisherBreakingNothing.class, UNREACHABLE_SCENARIO,
                "oneMissingDestinationAmongManyAggregatesLeavesEveryOtherAggregateAcked",
                "afterAFailedMessageLaterMessagesOfItsAggregateAreNotAttempted");
    }

    private static final String UNREACHABLE_SCENARIO = "anUnreachableBrokerAnswersNotAttemptedForFiftyAggregatesWithinThePublishTimeout";

    // ------------------------------------------------------------------------------------ running

    private static void assertFails(Class<?> contractRun, String scenario) {
        TestExecutionSummary summary = run(contractRun, scenario);
        assertThat(summary.getTestsStartedCount()).as("%s started", scenario).isEqualTo(1);
        assertThat(summary.getTestsFailedCount()).as("%s against %s failed", scenario, contractRun.getSimpleName())
                .isEqualTo(1);
        assertThat(summary.getFailures().get(0).getException())
                .as("failed on an assertion, not on set-up").isInstanceOf(AssertionError.class);
    }

    private static void assertPasses(Class<?> contractRun, String... scenarios) {
        for (String scenario : scenarios) {
            TestExecutionSummary summary = run(contractRun, scenario);
            assertThat(summary.getTestsSucceededCount()).as("%s against %s passed", scenario,
                    contractRun.getSimpleName()).isEqualTo(1);
        }
    }

    private static TestExecutionSummary run(Class<?> contractRun, String scenario) {
        LauncherDiscoveryRequest request = LauncherDiscoveryRequestBuilder.request()
                .selectors(selectMethod(contractRun, scenario))
                .configurationParameter(LAUNCHED_HERE, "true").build();
        SummaryGeneratingListener listener = new SummaryGeneratingListener();
        LauncherFactory.create().execute(request, listener);
        return listener.getSummary();
    }

    private static final String LAUNCHED_HERE = "queuebox.contracts.brokenAdapters";

    /**
     * The broken adapters below are meant to fail their contract, and only this test's own launches run them:
     * a surefire -Dtest pattern such as '*Contract*' drops the default exclusion of nested classes and would
     * otherwise run (and fail) them.
     */
    static final class OnlyLaunchedHere implements ExecutionCondition {
        @Override
        public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
            return context.getConfigurationParameter(LAUNCHED_HERE).isPresent()
                    ? ConditionEvaluationResult.enabled("launched by ContractsCatchBrokenAdaptersTest")
                    : ConditionEvaluationResult.disabled("a broken adapter, run only by ContractsCatchBrokenAdaptersTest");
        }
    }

    // ------------------------------------------------------------------------------------ broken stores

    @ExtendWith(OnlyLaunchedHere.class)
    abstract static class InMemoryRun extends OutboxStoreContract {
        InMemoryOutboxStore inner;

        abstract OutboxStore wrap(InMemoryOutboxStore store);

        @Override
        protected OutboxStore newStoreOnEmptyOutbox() {
            inner = InMemoryOutboxStore.create();
            return wrap(inner);
        }

        @Override
        protected void writeCommitted(List<OutboxEvent> events) {
            inner.enqueueAll(events);
        }

        @Override
        protected UncommittedWrite beginUncommittedWrite(OutboxEvent event) {
            InMemoryOutboxStore.Transaction transaction = inner.begin();
            inner.enqueue(transaction, event);
            return new UncommittedWrite() {
                @Override
                public void commit() {
                    transaction.commit();
                }

                @Override
                public void rollback() {
                    transaction.rollback();
                }
            };
        }
    }

    static class StoreIgnoringNothing extends InMemoryRun {
        @Override
        OutboxStore wrap(InMemoryOutboxStore store) {
            return new Delegating(store);
        }
    }

    static class StoreIgnoringFencing extends InMemoryRun {
        @Override
        OutboxStore wrap(InMemoryOutboxStore store) {
            return new Delegating(store) {
                @Override
                public int markSent(LeaseToken lease, Collection<UUID> eventIds) {
                    return eachWithCurrentLease(eventIds, (current, id) -> store.markSent(current, List.of(id)));
                }

                @Override
                public int release(LeaseToken lease, Collection<UUID> eventIds) {
                    return eachWithCurrentLease(eventIds, (current, id) -> store.release(current, List.of(id)));
                }

                private int eachWithCurrentLease(Collection<UUID> ids, BiFunction<LeaseToken, UUID, Integer> update) {
                    int count = 0;
                    for (UUID id : ids) {
                        LeaseToken current = store.row(id).map(InMemoryOutboxStore.StoredRow::lease).orElse(null);
                        if (current != null) {
                            count += update.apply(current, id);
                        }
                    }
                    return count;
                }
            };
        }
    }

    static class StoreIgnoringOrdering extends InMemoryRun {
        @Override
        OutboxStore wrap(InMemoryOutboxStore store) {
            return new Delegating(store) {
                @Override
                public ClaimBatch claim(ClaimRequest request) {
                    return store.claim(new ClaimRequest(request.owner(), request.maxRows(), request.leaseLength(),
                            Ordering.NONE, request.parkingPolicy()));
                }
            };
        }
    }

    static class StoreWithoutTransactions extends InMemoryRun {
        @Override
        OutboxStore wrap(InMemoryOutboxStore store) {
            return new Delegating(store);
        }

        @Override
        protected UncommittedWrite beginUncommittedWrite(OutboxEvent event) {
            inner.enqueue(event);
            return new UncommittedWrite() {
                @Override
                public void commit() {
                }

                @Override
                public void rollback() {
                }
            };
        }
    }

    /**
     * A store whose open write transactions neither block later writers of their aggregate nor hold their
     * rows back (what the SQL stores did before issue 11): the uncommitted row only reaches the store when
     * it commits.
     */
    static class StoreIgnoringOpenWrites extends InMemoryRun {
        @Override
        OutboxStore wrap(InMemoryOutboxStore store) {
            return new Delegating(store);
        }

        @Override
        protected UncommittedWrite beginUncommittedWrite(OutboxEvent event) {
            return new UncommittedWrite() {
                @Override
                public void commit() {
                    inner.enqueue(event);
                }

                @Override
                public void rollback() {
                }
            };
        }
    }

    static class Delegating implements OutboxStore {
        private final OutboxStore store;

        Delegating(OutboxStore store) {
            this.store = store;
        }

        @Override public ClaimBatch claim(ClaimRequest request) { return store.claim(request); }
        @Override public int markSent(LeaseToken lease, Collection<UUID> ids) { return store.markSent(lease, ids); }
        @Override public int reschedule(LeaseToken lease, List<Reschedule> retries) { return store.reschedule(lease, retries); }
        @Override public int park(LeaseToken lease, List<Park> parkings) { return store.park(lease, parkings); }
        @Override public int release(LeaseToken lease, Collection<UUID> ids) { return store.release(lease, ids); }
        @Override public int renew(LeaseToken lease, Duration length) { return store.renew(lease, length); }
        @Override public Optional<Duration> timeUntilNextDue() { return store.timeUntilNextDue(); }
        @Override public int purgeSent(Duration retention, int maxRows) { return store.purgeSent(retention, maxRows); }
        @Override public BacklogStats stats() { return store.stats(); }
        @Override public List<ParkedEvent> parked(ReplaySelector selector, int limit) { return store.parked(selector, limit); }
        @Override public int replay(ReplaySelector selector) { return store.replay(selector); }
    }

    // ------------------------------------------------------------------------------------ broken publishers

    @ExtendWith(OnlyLaunchedHere.class)
    abstract static class RecordingRun extends MessagePublisherContract {
        RecordingPublisher broker;

        abstract MessagePublisher wrap(RecordingPublisher recording);

        @Override
        protected MessagePublisher newPublisher() {
            broker = RecordingPublisher.acking();
            broker.when(d -> d.event().headers().containsKey("poison")).failPermanently("rejected");
            return wrap(broker);
        }

        @Override
        protected MessagePublisher newPublisherForUnreachableBroker() {
            return wrap(unreachable());
        }

        RecordingPublisher unreachable() {
            RecordingPublisher unreachable = RecordingPublisher.acking();
            unreachable.when(d -> true).skip("connection refused");
            return unreachable;
        }

        @Override
        protected List<ReceivedMessage> awaitReceived(int count, Duration timeout) {
            return broker.received();
        }

        @Override
        protected OutboxEvent poisonOf(OutboxEvent event) {
            return event.withHeaders(Map.of("poison", "yes"));
        }
    }

    static class PublisherCarryingOnAfterFailure extends RecordingRun {
        @Override
        MessagePublisher wrap(RecordingPublisher recording) {
            return publishing(recording, batch -> {
                List<PublishOutcome> outcomes = new ArrayList<>();
                for (ClaimedDelivery delivery : batch) {
                    outcomes.addAll(recording.publish(List.of(delivery)));
                }
                return outcomes;
            });
        }
    }

    static class PublisherBreakingNothing extends RecordingRun {
        @Override
        MessagePublisher wrap(RecordingPublisher recording) {
            return publishing(recording, recording::publish);
        }
    }

    static class PublisherChargingAnOutage extends RecordingRun {
        @Override
        MessagePublisher wrap(RecordingPublisher recording) {
            return publishing(recording, recording::publish);
        }

        @Override
        RecordingPublisher unreachable() {
            RecordingPublisher unreachable = RecordingPublisher.acking();
            unreachable.when(d -> true).failRetriably("connection refused");
            return unreachable;
        }
    }

    /** Waits for the broker once per aggregate, as a producer blocking on metadata for every send does. */
    static class PublisherWaitingPerAggregate extends RecordingRun {
        @Override
        MessagePublisher wrap(RecordingPublisher recording) {
            return publishing(recording, recording::publish);
        }

        @Override
        RecordingPublisher unreachable() {
            RecordingPublisher unreachable = RecordingPublisher.acking();
            unreachable.when(d -> true).delayBy(Duration.ofMillis(60)).skip("connection refused");
            return unreachable;
        }

        @Override
        protected Duration publishTimeout() {
            return Duration.ofSeconds(1);
        }
    }

    /** After one failure answers "not attempted" for everything after it, whatever its aggregate. */
    static class PublisherGivingUpAfterOneFailure extends RecordingRun {
        @Override
        MessagePublisher wrap(RecordingPublisher recording) {
            return publishing(recording, batch -> {
                List<PublishOutcome> outcomes = new ArrayList<>();
                String failure = null;
                for (ClaimedDelivery delivery : batch) {
                    if (failure != null) {
                        outcomes.add(PublishOutcome.notAttempted(delivery.eventId(), "broker unavailable: " + failure));
                        continue;
                    }
                    PublishOutcome outcome = recording.publish(List.of(delivery)).get(0);
                    if (!outcome.isAcked()) {
                        failure = outcome.toString();
                    }
                    outcomes.add(outcome);
                }
                return outcomes;
            });
        }
    }

    static class PublisherAckingWithoutBroker extends RecordingRun {
        @Override
        MessagePublisher wrap(RecordingPublisher recording) {
            return publishing(recording, batch -> batch.stream()
                    .map(delivery -> PublishOutcome.acked(delivery.eventId())).toList());
        }
    }

    private static MessagePublisher publishing(RecordingPublisher recording,
                                               Function<List<ClaimedDelivery>, List<PublishOutcome>> publish) {
        return new MessagePublisher() {
            @Override
            public List<PublishOutcome> publish(List<ClaimedDelivery> batch) {
                return publish.apply(batch);
            }

            @Override
            public void close() {
                recording.close();
            }
        };
    }
}
