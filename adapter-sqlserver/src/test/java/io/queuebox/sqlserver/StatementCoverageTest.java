package io.queuebox.sqlserver;

import static java.util.Map.entry;
import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.testkit.outbox.OutboxStoreContract;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Which scenario exercises each statement of {@link SqlServerStatements}, checked by reflection: every
 * statement is listed, every reference names an existing {@code @Test} method of a suite that runs against
 * SQL Server, and every writer and store statement is exercised by at least one scenario of the shared
 * {@link OutboxStoreContract} (except those in {@link #NOT_IN_THE_CONTRACT}, each with its reason). This
 * proves coverage on paper only: where no SQL Server is available those suites are skipped.
 */
class StatementCoverageTest {

    private static final String CONTRACT = "SqlServerOutboxStoreTest#";
    private static final String DELETE_ON_SEND = "SqlServerDeleteOnSendOutboxStoreTest#";
    private static final String SQL = "SqlServerOutboxStoreSqlTest#";
    private static final String HELD = "SqlServerHeldOutboxStoreTest#";
    private static final String HELD_CLAIM = "SqlServerHeldClaimTest#";

    /** Statement name -> "Suite#testMethod" references. */
    static final Map<SqlServerStatements, List<String>> SCENARIOS = Map.ofEntries(
            entry(SqlServerStatements.INSERT_EVENTS, List.of(
                    CONTRACT + "claimReturnsDueRowsInSequenceOrderUpToMaxRows",
                    CONTRACT + "claimedRowsCarryTheEventAsWrittenTheBatchLeaseAndNoAttempts",
                    CONTRACT + "aRowCommittedAfterALaterRowWasSentIsStillDelivered",
                    CONTRACT + "aRolledBackWriteIsNeverClaimed",
                    CONTRACT + "aLaterEventOfAnAggregateWaitsForAnEarlierOneThatIsStillUncommitted",
                    "SqlServerOutboxWriterTest#aBatchLargerThanOneStatementKeepsListOrderAcrossStatements",
                    "SqlServerOutboxWriterTest#aMissingTableIsNamedWithHowToCreateIt")),
            entry(SqlServerStatements.CLAIM_ORDERED, List.of(
                    CONTRACT + "claimOnAnEmptyOutboxReturnsAnEmptyBatch",
                    CONTRACT + "anAggregatesRowsAreClaimedTogetherInWriteOrder",
                    CONTRACT + "orderingKeepsAnAggregatesLaterRowUntilTheEarlierIsSent",
                    CONTRACT + "aRetryNeverLetsLaterRowsOfItsAggregateOvertakeIt",
                    CONTRACT + "aLiveLeaseIsNotReclaimed",
                    CONTRACT + "anExpiredLeaseIsReclaimedByAnotherClaimer",
                    CONTRACT + "twoConcurrentClaimersNeverGetTheSameRow",
                    CONTRACT + "aParkedRowHoldsItsAggregateUnderHoldAggregate",
                    CONTRACT + "aParkedRowLetsItsAggregateContinueUnderContinueAggregate",
                    SQL + "aLaterRowIsNotClaimedWhileAConcurrentClaimerLocksItsEarlierSibling",
                    SQL + "aLaterRowIsNotClaimedWhileAnEarlierRowOfItsAggregateIsBeingWritten",
                    CONTRACT + "aLaterEventOfAnAggregateWaitsForAnEarlierOneThatIsStillUncommitted",
                    CONTRACT + "aLaterEventOfAnAggregateIsClaimableOnceTheEarlierWriteRolledBack",
                    SQL + "aPlainInsertOfALaterEventCommitsButIsHeldBackWhileTheEarlierInsertIsUncommitted",
                    SQL + "aBatchOf500IsOneRoundTripToClaimAndOneToMarkSent")),
            entry(SqlServerStatements.CLAIM_UNORDERED, List.of(
                    CONTRACT + "withoutOrderingLaterRowsOfAnAggregateAreClaimable",
                    SQL + "anUnorderedClaimIsOneStatementAndSkipsLockedRows")),
            entry(SqlServerStatements.CLAIM_ORDERED_HELD, List.of(
                    HELD + "claimOnAnEmptyOutboxReturnsAnEmptyBatch",
                    HELD + "anAggregatesRowsAreClaimedTogetherInWriteOrder",
                    HELD + "orderingKeepsAnAggregatesLaterRowUntilTheEarlierIsSent",
                    HELD + "aRetryNeverLetsLaterRowsOfItsAggregateOvertakeIt",
                    HELD + "aLiveLeaseIsNotReclaimed",
                    HELD + "twoConcurrentClaimersNeverGetTheSameRow",
                    HELD + "aParkedRowHoldsItsAggregateUnderHoldAggregate",
                    HELD + "aLaterEventOfAnAggregateWaitsForAnEarlierOneThatIsStillUncommitted",
                    HELD_CLAIM + "aLaterSiblingIsNotClaimedWhileTheEarlierIsHeldByAnotherClaimer",
                    HELD_CLAIM + "anEarlierSiblingRescheduledInAnOpenClaimStillHoldsTheLaterOneBack",
                    HELD_CLAIM + "anEarlierSiblingMarkedSentInAnOpenClaimLetsTheLaterOneGo",
                    HELD_CLAIM + "aClaimWhoseConnectionDiesFreesItsRowsAtOnce",
                    HELD_CLAIM + "aLiveLeaseIsNotTakenByAHeldClaim")),
            entry(SqlServerStatements.CLAIM_UNORDERED_HELD, List.of(
                    HELD + "withoutOrderingLaterRowsOfAnAggregateAreClaimable")),
            entry(SqlServerStatements.HELD_ALIVE, List.of(
                    HELD + "renewExtendsTheLease",
                    HELD + "releaseGivesRowsBackUnchanged",
                    HELD_CLAIM + "anOutcomeAfterTheDeadlineWritesNothing")),
            entry(SqlServerStatements.MARK_SENT_HELD, List.of(
                    HELD + "aSentRowIsNeverClaimedAgain",
                    HELD + "markSentCountsOnlyRowsOfTheLease",
                    HELD + "aStaleClaimerChangesNothingAfterItsRowsWereReclaimed",
                    HELD_CLAIM + "anOutcomeRestartsTheDeadline")),
            entry(SqlServerStatements.DELETE_SENT_HELD, List.of(
                    "SqlServerHeldDeleteOnSendOutboxStoreTest#aSentRowIsNeverClaimedAgain",
                    "SqlServerHeldDeleteOnSendOutboxStoreTest#markSentCountsOnlyRowsOfTheLease")),
            entry(SqlServerStatements.RESCHEDULE_HELD, List.of(
                    HELD + "rescheduleCountsTheAttemptAndKeepsTheReason",
                    HELD + "aRetryNeverLetsLaterRowsOfItsAggregateOvertakeIt",
                    HELD + "timeUntilNextDueIsTheDelayOfTheEarliestRetry",
                    HELD_CLAIM + "aRescheduledRowIsDueItsDelayAfterTheRescheduleNotAfterTheClaim",
                    HELD_CLAIM + "aStaleLeasedOutcomeIsFencedAfterAHeldClaimWroteItsOutcome")),
            entry(SqlServerStatements.PARK_HELD, List.of(
                    HELD + "aParkedRowIsNotClaimable",
                    HELD + "aParkedRowHoldsItsAggregateUnderHoldAggregate",
                    HELD + "statsCountPendingLeasedAndParkedRows")),
            entry(SqlServerStatements.TIME_UNTIL_NEXT_DUE_HELD, List.of(
                    HELD + "timeUntilNextDueIsEmptyWithoutPendingRows",
                    HELD + "timeUntilNextDueIsZeroWhenARowIsClaimable",
                    HELD + "timeUntilNextDueIsTheRemainingLeaseOfALeasedRow",
                    HELD_CLAIM + "aRescheduledRowIsDueItsDelayAfterTheRescheduleNotAfterTheClaim")),
            entry(SqlServerStatements.MARK_SENT, List.of(
                    CONTRACT + "aSentRowIsNeverClaimedAgain",
                    CONTRACT + "markSentCountsOnlyRowsOfTheLease",
                    CONTRACT + "aStaleClaimerChangesNothingAfterItsRowsWereReclaimed",
                    CONTRACT + "anExpiredLeaseThatNobodyReclaimedStillAcceptsItsToken")),
            entry(SqlServerStatements.DELETE_SENT, List.of(
                    DELETE_ON_SEND + "aSentRowIsNeverClaimedAgain",
                    DELETE_ON_SEND + "markSentCountsOnlyRowsOfTheLease",
                    DELETE_ON_SEND + "aStaleClaimerChangesNothingAfterItsRowsWereReclaimed",
                    SQL + "deleteOnSendRemovesTheRowWhenItIsConfirmed")),
            entry(SqlServerStatements.RESCHEDULE, List.of(
                    CONTRACT + "rescheduleCountsTheAttemptAndKeepsTheReason",
                    CONTRACT + "aRetryNeverLetsLaterRowsOfItsAggregateOvertakeIt",
                    CONTRACT + "timeUntilNextDueIsTheDelayOfTheEarliestRetry",
                    CONTRACT + "aStaleClaimerChangesNothingAfterItsRowsWereReclaimed")),
            entry(SqlServerStatements.PARK, List.of(
                    CONTRACT + "aParkedRowIsNotClaimable",
                    CONTRACT + "aParkedRowHoldsItsAggregateUnderHoldAggregate",
                    CONTRACT + "statsCountPendingLeasedAndParkedRows")),
            entry(SqlServerStatements.RELEASE, List.of(
                    CONTRACT + "releaseGivesRowsBackUnchanged",
                    CONTRACT + "anExpiredLeaseThatNobodyReclaimedStillAcceptsItsToken")),
            entry(SqlServerStatements.RENEW, List.of(
                    CONTRACT + "renewExtendsTheLease",
                    CONTRACT + "aStaleClaimerChangesNothingAfterItsRowsWereReclaimed")),
            entry(SqlServerStatements.TIME_UNTIL_NEXT_DUE, List.of(
                    CONTRACT + "timeUntilNextDueIsEmptyWithoutPendingRows",
                    CONTRACT + "timeUntilNextDueIsZeroWhenARowIsClaimable",
                    CONTRACT + "timeUntilNextDueIsTheDelayOfTheEarliestRetry",
                    CONTRACT + "timeUntilNextDueIsTheRemainingLeaseOfALeasedRow")),
            entry(SqlServerStatements.PURGE_SENT, List.of(
                    CONTRACT + "purgeDeletesOnlySentRowsOlderThanTheRetentionInBoundedBatches",
                    SQL + "purgeSkipsRowsAnotherSessionLocks")),
            entry(SqlServerStatements.STATS, List.of(
                    CONTRACT + "statsCountPendingLeasedAndParkedRows")),
            entry(SqlServerStatements.PARKED_BY_EVENT_IDS, List.of(
                    CONTRACT + "parkedListsMatchingRowsInSequenceOrderUpToTheLimit")),
            entry(SqlServerStatements.PARKED_BY_AGGREGATE, List.of(
                    CONTRACT + "parkedListsMatchingRowsInSequenceOrderUpToTheLimit")),
            entry(SqlServerStatements.PARKED_ALL, List.of(
                    CONTRACT + "parkedListsMatchingRowsInSequenceOrderUpToTheLimit",
                    CONTRACT + "replayMakesParkedRowsPendingAndDueNowWithAttemptsReset")),
            entry(SqlServerStatements.PARKED_CAPPED_BY_EVENT_IDS, List.of(
                    CONTRACT + "aCappedParkedListReadsAtMostThatManyPayloadBytesAndTheEventOtherwiseUnchanged")),
            entry(SqlServerStatements.PARKED_CAPPED_BY_AGGREGATE, List.of(
                    CONTRACT + "aCappedParkedListReadsAtMostThatManyPayloadBytesAndTheEventOtherwiseUnchanged",
                    SQL + "aCappedParkedReadByAggregateAndOfAllRowsCutsThePayloadInTheDatabase")),
            entry(SqlServerStatements.PARKED_CAPPED_ALL, List.of(
                    CONTRACT + "aCappedParkedListReadsAtMostThatManyPayloadBytesAndTheEventOtherwiseUnchanged",
                    SQL + "aCappedParkedReadByAggregateAndOfAllRowsCutsThePayloadInTheDatabase")),
            entry(SqlServerStatements.REPLAY_BY_EVENT_IDS, List.of(
                    CONTRACT + "replayMakesParkedRowsPendingAndDueNowWithAttemptsReset")),
            entry(SqlServerStatements.REPLAY_BY_AGGREGATE, List.of(
                    CONTRACT + "replayMakesParkedRowsPendingAndDueNowWithAttemptsReset")),
            entry(SqlServerStatements.REPLAY_ALL, List.of(
                    SQL + "replayAllMakesEveryParkedRowPendingAndDueNow")),
            entry(SqlServerStatements.CAPTURE_STATE_FIND_ALL, List.of(
                    "SqlServerCaptureStateStoreTest#aFirstStartInsertsAndALaterStartKeepsTheFirstRunTime")),
            entry(SqlServerStatements.CAPTURE_STATE_FIND, List.of(
                    "SqlServerCaptureStateStoreTest#aFirstStartInsertsAndALaterStartKeepsTheFirstRunTime",
                    "SqlServerCaptureStateStoreTest#statusIsRecordedAndAForgottenIdentityIsGone")),
            entry(SqlServerStatements.CAPTURE_STATE_RECORD_START, List.of(
                    "SqlServerCaptureStateStoreTest#aFirstStartInsertsAndALaterStartKeepsTheFirstRunTime")),
            entry(SqlServerStatements.CAPTURE_STATE_RECORD_STATUS, List.of(
                    "SqlServerCaptureStateStoreTest#statusIsRecordedAndAForgottenIdentityIsGone")),
            entry(SqlServerStatements.CAPTURE_STATE_FORGET, List.of(
                    "SqlServerCaptureStateStoreTest#statusIsRecordedAndAForgottenIdentityIsGone")),
            entry(SqlServerStatements.LOCK_ACQUIRE, List.of(
                    "SqlServerCaptureLockTest#aSecondSessionCannotTakeAHeldIdentityAndCanOnceItIsClosed",
                    "SqlServerCaptureLockTest#aLockFromAJdbcUrlBehavesTheSame")),
            entry(SqlServerStatements.LOCK_IS_HELD, List.of(
                    "SqlServerCaptureLockTest#aSecondSessionCannotTakeAHeldIdentityAndCanOnceItIsClosed",
                    "SqlServerCaptureLockTest#aKilledSessionLosesTheLock")),
            entry(SqlServerStatements.LOCK_RELEASE, List.of(
                    "SqlServerCaptureLockTest#aSecondSessionCannotTakeAHeldIdentityAndCanOnceItIsClosed")),
            entry(SqlServerStatements.INSPECT_DATABASE_CDC, List.of(
                    "SqlServerCaptureSourceInspectorTest#eachMissingPieceIsASentenceUntilCaptureCanStart")),
            entry(SqlServerStatements.INSPECT_TABLE_CDC, List.of(
                    "SqlServerCaptureSourceInspectorTest#eachMissingPieceIsASentenceUntilCaptureCanStart")),
            entry(SqlServerStatements.INSPECT_AGENT_SERVICE, List.of(
                    "SqlServerCaptureSourceInspectorTest#eachMissingPieceIsASentenceUntilCaptureCanStart")),
            // Reached only when sys.dm_server_services has no Agent row or is not readable.
            entry(SqlServerStatements.INSPECT_AGENT_SESSIONS, List.of()),
            entry(SqlServerStatements.INSPECT_AGENT_SERVICECONTROL, List.of()));

    /** Statements no contract scenario runs, each for a stated reason. */
    private static final Map<SqlServerStatements, String> NOT_IN_THE_CONTRACT = Map.of(
            SqlServerStatements.REPLAY_ALL, "the contract replays by aggregate and by event ids, never all parked rows",
            SqlServerStatements.INSPECT_AGENT_SESSIONS, "the fallback where sys.dm_server_services has no Agent row",
            SqlServerStatements.INSPECT_AGENT_SERVICECONTROL, "the fallback for accounts without VIEW SERVER STATE");

    private static final List<Class<?>> SUITES = List.of(SqlServerOutboxStoreTest.class,
            SqlServerDeleteOnSendOutboxStoreTest.class, SqlServerHeldOutboxStoreTest.class,
            SqlServerHeldDeleteOnSendOutboxStoreTest.class, SqlServerHeldClaimTest.class, SqlServerOutboxStoreSqlTest.class,
            SqlServerOutboxWriterTest.class, SqlServerCaptureStateStoreTest.class, SqlServerCaptureLockTest.class,
            SqlServerCaptureSourceInspectorTest.class);

    @Test
    void everyStatementIsListed() {
        assertThat(SCENARIOS.keySet()).containsExactlyInAnyOrderElementsOf(EnumSet.allOf(SqlServerStatements.class));
    }

    @Test
    void everyReferenceNamesAnExistingTestOfASqlServerSuite() {
        List<String> broken = new ArrayList<>();
        SCENARIOS.forEach((statement, references) -> {
            for (String reference : references) {
                if (testMethod(reference) == null) {
                    broken.add(statement + " -> " + reference);
                }
            }
        });
        assertThat(broken).isEmpty();
    }

    @Test
    void everyWriterAndStoreStatementRunsInAContractScenario() {
        List<String> uncovered = new ArrayList<>();
        for (SqlServerStatements statement : SqlServerStatements.values()) {
            boolean byContract = SCENARIOS.get(statement).stream()
                    .map(StatementCoverageTest::testMethod)
                    .anyMatch(method -> method != null && method.getDeclaringClass() == OutboxStoreContract.class);
            boolean needsContract = statement.group() == SqlServerStatements.Group.STORE
                    || statement.group() == SqlServerStatements.Group.WRITER;
            if (needsContract && !byContract && !NOT_IN_THE_CONTRACT.containsKey(statement)) {
                uncovered.add(statement.name());
            }
            if (!needsContract && SCENARIOS.get(statement).isEmpty() && !NOT_IN_THE_CONTRACT.containsKey(statement)) {
                uncovered.add(statement.name());
            }
        }
        assertThat(uncovered).isEmpty();
        // An exception must stay an exception: once a contract scenario runs it, drop it from the list.
        for (SqlServerStatements statement : NOT_IN_THE_CONTRACT.keySet()) {
            assertThat(SCENARIOS.get(statement)).noneMatch(reference -> {
                Method method = testMethod(reference);
                return method != null && method.getDeclaringClass() == OutboxStoreContract.class;
            });
        }
    }

    @Test
    void theContractSuitesRunTheSharedContract() {
        assertThat(OutboxStoreContract.class).isAssignableFrom(SqlServerOutboxStoreTest.class);
        assertThat(OutboxStoreContract.class).isAssignableFrom(SqlServerDeleteOnSendOutboxStoreTest.class);
        assertThat(OutboxStoreContract.class).isAssignableFrom(SqlServerHeldOutboxStoreTest.class);
        assertThat(OutboxStoreContract.class).isAssignableFrom(SqlServerHeldDeleteOnSendOutboxStoreTest.class);
    }

    /** The @Test method a "Suite#method" reference names, declared in the suite or inherited; null if none. */
    private static Method testMethod(String reference) {
        String[] parts = reference.split("#", 2);
        Class<?> suite = SUITES.stream().filter(c -> c.getSimpleName().equals(parts[0])).findFirst().orElse(null);
        for (Class<?> type = suite; type != null && type != Object.class; type = type.getSuperclass()) {
            for (Method method : type.getDeclaredMethods()) {
                if (method.getName().equals(parts[1]) && method.getParameterCount() == 0
                        && method.isAnnotationPresent(Test.class)) {
                    return method;
                }
            }
        }
        return null;
    }

    @Test
    void theReferencesResolverRefusesWhatDoesNotExist() {
        assertThat(testMethod(CONTRACT + "noSuchScenario")).isNull();
        assertThat(testMethod("NoSuchSuite#renewExtendsTheLease")).isNull();
        assertThat(testMethod(CONTRACT + "store")).as("a method that is not a @Test").isNull();
        assertThat(testMethod(CONTRACT + "renewExtendsTheLease").getDeclaringClass()).isEqualTo(OutboxStoreContract.class);
        assertThat(Set.copyOf(SUITES)).hasSize(SUITES.size());
    }
}
