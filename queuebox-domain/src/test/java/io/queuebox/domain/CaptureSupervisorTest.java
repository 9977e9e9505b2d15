package io.queuebox.domain;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.domain.CaptureStatus.FaultReason;
import io.queuebox.domain.CaptureStatus.State;
import io.queuebox.ports.CaptureConnector;
import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureLock;
import io.queuebox.ports.CaptureMode;
import io.queuebox.ports.CaptureSettings;
import io.queuebox.ports.CaptureSourceReport;
import io.queuebox.ports.CaptureStateDirectory;
import io.queuebox.ports.CaptureStateRecord;
import io.queuebox.ports.CaptureStateStore;
import io.queuebox.ports.WakeReason;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class CaptureSupervisorTest {

    private static final CaptureFingerprint FINGERPRINT =
            new CaptureFingerprint("qb_slot", "qb_pub", "public", "queuebox_outbox", "db-host", "orders");
    private static final CaptureSettings SETTINGS = new CaptureSettings(true, CaptureMode.POSTGRES_LOGICAL,
            FINGERPRINT, 5432, "/var/lib/queuebox/capture", Duration.ofSeconds(30));
    private static final CaptureSettings SHORT_INTERVAL = new CaptureSettings(true, CaptureMode.POSTGRES_LOGICAL,
            FINGERPRINT, 5432, "/var/lib/queuebox/capture", Duration.ofMillis(200));
    private static final CaptureIdentity KNOWN = new CaptureIdentity("known-identity");

    private final RowStore rows = new RowStore();
    private final Directory directory = new Directory();
    private final Locks locks = new Locks();
    private final Source source = new Source();
    private final Connectors connectors = new Connectors();
    private final Wakes wakes = new Wakes();
    private final List<CaptureSupervisor> supervisors = new ArrayList<>();

    @AfterEach
    void closeAll() {
        supervisors.forEach(CaptureSupervisor::close);
    }

    @Test
    void aFirstStartWritesANewIdentityRecordsItAndStreams() {
        CaptureSupervisor supervisor = started();

        awaitState(supervisor, State.RUNNING);
        CaptureIdentity identity = directory.identity.orElseThrow();
        assertThat(rows.find(identity)).isPresent();
        assertThat(supervisor.health().isUp()).isTrue();
        assertThat(locks.held).containsExactly(identity.value());
        assertThat(wakes.reasons).contains(WakeReason.CAPTURE_RESTART);

        connectors.last().events.wake(WakeReason.CAPTURE);
        assertThat(wakes.reasons).contains(WakeReason.CAPTURE);
    }

    @Test
    void aWakeUpThatNamesItsRowReachesDeliveryWithTheRow() {
        CaptureSupervisor supervisor = started();
        awaitState(supervisor, State.RUNNING);
        UUID row = UUID.randomUUID();

        connectors.last().events.wakeFor(WakeReason.CAPTURE, row);

        assertThat(wakes.named).as("delivery hears which row, to skip a claim it made already").containsExactly(row);
    }

    /**
     * A connector reports the rows of one poll of the log in one call: delivery must hear them as one named wake-up,
     * not as an unnamed one (the listener's default), which would start a claim for rows the engine claimed already.
     */
    @Test
    void aWakeUpThatNamesTheRowsOfOnePollReachesDeliveryAsOneWithTheRows() {
        CaptureSupervisor supervisor = started();
        awaitState(supervisor, State.RUNNING);
        List<UUID> rowsOfOnePoll = List.of(UUID.randomUUID(), UUID.randomUUID(), UUID.randomUUID());
        int wakesBefore = wakes.count(WakeReason.CAPTURE);

        connectors.last().events.wakeFor(WakeReason.CAPTURE, rowsOfOnePoll);

        assertThat(wakes.namedTogether).as("one wake-up naming every row of the poll").containsExactly(rowsOfOnePoll);
        assertThat(wakes.count(WakeReason.CAPTURE) - wakesBefore).isEqualTo(1);
    }

    @Test
    void aRestartWithMatchingStateResumesTheSameIdentity() {
        rows.recordStart(KNOWN, CaptureMode.POSTGRES_LOGICAL, FINGERPRINT);
        directory.identity = Optional.of(KNOWN);
        directory.offsets = true;

        CaptureSupervisor supervisor = started();

        awaitState(supervisor, State.RUNNING);
        assertThat(supervisor.status().identity()).contains(KNOWN);
        assertThat(connectors.created).hasSize(1);
    }

    @Test
    void anEmptyVolumeWhileTheTableSaysCaptureRanIsAFaultWithoutRetry() {
        rows.recordStart(KNOWN, CaptureMode.POSTGRES_LOGICAL, FINGERPRINT);

        assertFaultWithoutRetry(started(), FaultReason.STATE_MISSING, "volume is missing or empty");
    }

    @Test
    void stateFilesOfAnotherInstanceAreAFault() {
        directory.identity = Optional.of(new CaptureIdentity("someone-else"));
        directory.offsets = true;

        assertFaultWithoutRetry(started(), FaultReason.FOREIGN_STATE, "different instance");
    }

    @Test
    void aChangedSettingIsAFaultNamingTheSetting() {
        rows.recordStart(KNOWN, CaptureMode.POSTGRES_LOGICAL,
                new CaptureFingerprint("old_slot", "qb_pub", "public", "queuebox_outbox", "db-host", "orders"));
        directory.identity = Optional.of(KNOWN);
        directory.offsets = true;

        assertFaultWithoutRetry(started(), FaultReason.SETTINGS_CHANGED, "slot (was 'old_slot', now 'qb_slot')");
    }

    @Test
    void aSlotDroppedWhileStateRemainsIsAFault() {
        rows.recordStart(KNOWN, CaptureMode.POSTGRES_LOGICAL, FINGERPRINT);
        directory.identity = Optional.of(KNOWN);
        directory.offsets = true;
        source.slotExists = false;

        assertFaultWithoutRetry(started(), FaultReason.SLOT_MISSING, "qb_slot");
    }

    @Test
    void aSecondProcessWithTheSameIdentityReportsThatItHasAnOwner() {
        rows.recordStart(KNOWN, CaptureMode.POSTGRES_LOGICAL, FINGERPRINT);
        directory.identity = Optional.of(KNOWN);
        directory.offsets = true;
        CaptureSupervisor owner = started();
        awaitState(owner, State.RUNNING);

        CaptureSupervisor second = started();

        awaitState(second, State.FAULT);
        assertThat(second.status().fault()).contains(FaultReason.IDENTITY_OWNED);
        assertThat(second.status().message()).contains("already has an owner");
        assertThat(owner.status().state()).isEqualTo(State.RUNNING);
        assertThat(connectors.created).hasSize(1);
    }

    @Test
    void aDatabaseNotSetUpForCaptureIsAFaultNamingTheProblem() {
        source.problems = List.of("publication 'qb_pub' does not exist: CREATE PUBLICATION qb_pub FOR TABLE ...");

        assertFaultWithoutRetry(started(), FaultReason.SOURCE_NOT_READY, "publication 'qb_pub' does not exist");
    }

    @Test
    void anUnwritableStateDirectoryIsAFaultNamingThePath() {
        directory.writable = false;

        assertFaultWithoutRetry(started(), FaultReason.STATE_DIRECTORY_NOT_WRITABLE, "/var/lib/queuebox/capture");
    }

    @Test
    void aFailedConnectorIsRestartedWithBackoffAndEveryAttemptWakesDelivery() {
        CaptureSupervisor supervisor = started();
        awaitState(supervisor, State.RUNNING);
        int wakesBefore = wakes.count(WakeReason.CAPTURE_RESTART);

        connectors.last().events.failed(new IllegalStateException("connection reset"));

        awaitState(supervisor, State.RETRYING);
        assertThat(supervisor.health().isUp()).isFalse();
        assertThat(supervisor.status().message()).contains("connection reset");
        await(() -> connectors.created.size() == 2, Duration.ofSeconds(5));
        awaitState(supervisor, State.RUNNING);
        assertThat(wakes.count(WakeReason.CAPTURE_RESTART)).isGreaterThanOrEqualTo(wakesBefore + 2);
        assertThat(connectors.created.get(0).closed).isTrue();
    }

    @Test
    void aSlotThatDisappearsWhileRunningStopsCaptureInsteadOfRestarting() {
        CaptureSupervisor supervisor = started();
        awaitState(supervisor, State.RUNNING);
        directory.offsets = true;
        source.slotExists = false;

        connectors.last().events.failed(new IllegalStateException("replication slot dropped"));

        awaitState(supervisor, State.FAULT);
        assertThat(supervisor.status().fault()).contains(FaultReason.SLOT_MISSING);
        assertThat(connectors.created).hasSize(1);
    }

    /**
     * Issue 13: the lock was checked only when the connector restarted, so a terminated lock session went unnoticed
     * for as long as the connector kept streaming.
     */
    @Test
    void aLockLostWhileTheConnectorRunsIsReportedWithinOneReconciliationIntervalAndTakenAgain() {
        CaptureSupervisor supervisor = started(SHORT_INTERVAL);
        awaitState(supervisor, State.RUNNING);
        CaptureIdentity identity = supervisor.status().identity().orElseThrow();
        FakeConnector first = connectors.last();
        int wakesBefore = wakes.count(WakeReason.CAPTURE_RESTART);

        long lostAt = System.nanoTime();
        locks.loseSession(identity);

        await(() -> supervisor.status().state() == State.FAULT, Duration.ofSeconds(5));
        Duration detectedAfter = Duration.ofNanos(System.nanoTime() - lostAt);
        assertThat(supervisor.status().fault()).contains(FaultReason.OWNERSHIP_LOST);
        assertThat(supervisor.status().message()).contains("OWNERSHIP_LOST").contains(identity.value())
                .contains("session holding the lock").contains("taking the lock again in 1 s");
        assertThat(detectedAfter).as("found within one reconciliation interval (200 ms) plus slack")
                .isLessThan(SHORT_INTERVAL.reconciliationInterval().plusMillis(800));
        assertThat(supervisor.health().isUp()).isFalse();
        await(() -> first.closed, Duration.ofSeconds(1));
        assertThat(first.closed).as("the connector of the lost owner is stopped").isTrue();
        assertThat(wakes.count(WakeReason.CAPTURE_RESTART)).as("delivery is woken").isGreaterThan(wakesBefore);
        assertThat(rows.statuses).anyMatch(s -> s.startsWith(identity + " FAULT OWNERSHIP_LOST: "));

        // Nobody else took it: after the restart backoff (1 s) the same identity resumes with a new connector.
        await(() -> connectors.created.size() == 2 && supervisor.status().state() == State.RUNNING,
                Duration.ofSeconds(5));
        assertThat(supervisor.status().state()).isEqualTo(State.RUNNING);
        assertThat(supervisor.status().identity()).contains(identity);
        assertThat(locks.held).containsExactly(identity.value());
    }

    @Test
    void aLockTakenByAnotherProcessAfterItWasLostIsReportedAsOwnedAndNotRetried() {
        CaptureSupervisor supervisor = started(SHORT_INTERVAL);
        awaitState(supervisor, State.RUNNING);
        CaptureIdentity identity = supervisor.status().identity().orElseThrow();

        locks.loseSession(identity);
        Optional<CaptureLock.Held> other = locks.tryAcquire(identity);
        assertThat(other).as("another process takes the free lock").isPresent();

        await(() -> supervisor.status().fault().filter(FaultReason.IDENTITY_OWNED::equals).isPresent(),
                Duration.ofSeconds(5));
        assertThat(supervisor.status().state()).isEqualTo(State.FAULT);
        assertThat(supervisor.status().message()).contains("already has an owner");
        sleepQuietly(Duration.ofMillis(1300));
        assertThat(connectors.created).as("no connector after the first").hasSize(1);
        assertThat(connectors.created.get(0).closed).isTrue();
        assertThat(supervisor.status().fault()).contains(FaultReason.IDENTITY_OWNED);
        other.get().close();
    }

    /** A lost lock often means the database is down: reporting the fault must not depend on it answering. */
    @Test
    void aLockLostWhileTheDatabaseIsDownIsReportedAsOwnershipLostAndTakenAgainOnceItAnswers() {
        CaptureSupervisor supervisor = started(SHORT_INTERVAL);
        awaitState(supervisor, State.RUNNING);
        CaptureIdentity identity = supervisor.status().identity().orElseThrow();

        rows.down = true;
        locks.loseSession(identity);

        await(() -> supervisor.status().state() == State.FAULT, Duration.ofSeconds(5));
        assertThat(supervisor.status().fault()).contains(FaultReason.OWNERSHIP_LOST);
        sleepQuietly(Duration.ofMillis(300));
        assertThat(supervisor.status().fault()).as("still the lost ownership during the backoff, not a failure to"
                + " record it").contains(FaultReason.OWNERSHIP_LOST);
        assertThat(connectors.created.get(0).closed).isTrue();

        rows.down = false;
        await(() -> connectors.created.size() == 2 && supervisor.status().state() == State.RUNNING,
                Duration.ofSeconds(10));
        assertThat(supervisor.status().state()).isEqualTo(State.RUNNING);
        assertThat(supervisor.status().identity()).contains(identity);
    }

    @Test
    void theLockIsCheckedAboutOncePerReconciliationIntervalWhileRunning() {
        CaptureSupervisor supervisor = started(SHORT_INTERVAL);
        awaitState(supervisor, State.RUNNING);
        int before = locks.checks.get();

        sleepQuietly(Duration.ofMillis(1000));

        assertThat(locks.checks.get() - before).as("checks in one second at a 200 ms interval").isBetween(3, 6);
        assertThat(supervisor.status().state()).isEqualTo(State.RUNNING);
    }

    @Test
    void aLockFoundLostWhenTheConnectorRestartsIsTakenAgain() {
        CaptureSupervisor supervisor = started();
        awaitState(supervisor, State.RUNNING);
        CaptureIdentity identity = supervisor.status().identity().orElseThrow();

        locks.loseSession(identity);
        connectors.last().events.failed(new IllegalStateException("terminating connection due to administrator command"));

        await(() -> supervisor.status().fault().filter(FaultReason.OWNERSHIP_LOST::equals).isPresent(),
                Duration.ofSeconds(5));
        await(() -> connectors.created.size() == 2 && supervisor.status().state() == State.RUNNING,
                Duration.ofSeconds(10));
        assertThat(supervisor.status().state()).isEqualTo(State.RUNNING);
        assertThat(locks.held).containsExactly(identity.value());
    }

    @Test
    void disabledCaptureRunsNothingAndIsHealthy() {
        CaptureSupervisor supervisor = builder().settings(new CaptureSettings(false, CaptureMode.POLLING, FINGERPRINT,
                5432, "/tmp", Duration.ofSeconds(30))).build();
        supervisor.start(wakes);

        assertThat(supervisor.status().state()).isEqualTo(State.DISABLED);
        assertThat(supervisor.health().isUp()).isTrue();
        assertThat(connectors.created).isEmpty();
    }

    @Test
    void closeStopsTheConnectorAndReleasesTheLock() {
        CaptureSupervisor supervisor = started();
        awaitState(supervisor, State.RUNNING);

        supervisor.close();

        assertThat(connectors.last().closed).isTrue();
        assertThat(locks.held).isEmpty();
        assertThat(supervisor.status().state()).isEqualTo(State.STOPPED);
    }

    private void assertFaultWithoutRetry(CaptureSupervisor supervisor, FaultReason reason, String messagePart) {
        awaitState(supervisor, State.FAULT);
        assertThat(supervisor.status().fault()).contains(reason);
        assertThat(supervisor.status().message()).contains(messagePart);
        assertThat(supervisor.health().isUp()).isFalse();
        assertThat(supervisor.health().details()).containsEntry("fault", reason.name());
        // Longer than the first restart delay (1 s): a fault must not be retried.
        sleepQuietly(Duration.ofMillis(1300));
        assertThat(connectors.created).isEmpty();
        assertThat(supervisor.status().state()).isEqualTo(State.FAULT);
        assertThat(locks.held).isEmpty();
    }

    private CaptureSupervisor started() {
        return started(SETTINGS);
    }

    private CaptureSupervisor started(CaptureSettings settings) {
        CaptureSupervisor supervisor = builder().settings(settings).build();
        supervisors.add(supervisor);
        supervisor.start(wakes);
        return supervisor;
    }

    private CaptureSupervisor.Builder builder() {
        return CaptureSupervisor.builder().stateStore(rows).stateDirectory(directory).lock(locks)
                .inspector(settings -> new CaptureSourceReport(source.slotExists, OptionalLong.empty(), source.problems))
                .connectors(connectors);
    }

    private static void awaitState(CaptureSupervisor supervisor, State state) {
        await(() -> supervisor.status().state() == state, Duration.ofSeconds(5));
        assertThat(supervisor.status().state()).isEqualTo(state);
    }

    private static void await(BooleanSupplier condition, Duration atMost) {
        long deadline = System.nanoTime() + atMost.toNanos();
        while (!condition.getAsBoolean() && System.nanoTime() < deadline) {
            sleepQuietly(Duration.ofMillis(10));
        }
    }

    private static void sleepQuietly(Duration duration) {
        try {
            Thread.sleep(duration.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static final class RowStore implements CaptureStateStore {
        private final List<CaptureStateRecord> records = new CopyOnWriteArrayList<>();
        /** The database does not answer: every call fails, as a JDBC store's would. */
        volatile boolean down;

        private void answer() {
            if (down) {
                throw new IllegalStateException("Connection to db-host:5432 refused");
            }
        }

        @Override
        public List<CaptureStateRecord> findAll() {
            answer();
            return List.copyOf(records);
        }

        @Override
        public void recordStart(CaptureIdentity identity, CaptureMode mode, CaptureFingerprint fingerprint) {
            answer();
            records.removeIf(r -> r.identity().equals(identity));
            records.add(new CaptureStateRecord(identity, mode, fingerprint, Instant.EPOCH, Instant.EPOCH));
        }

        final List<String> statuses = new CopyOnWriteArrayList<>();

        @Override
        public void recordStatus(CaptureIdentity identity, String state, String faultReason) {
            answer();
            statuses.add(identity + " " + state + (faultReason == null ? "" : " " + faultReason));
        }

        @Override
        public boolean forget(CaptureIdentity identity) {
            return records.removeIf(r -> r.identity().equals(identity));
        }
    }

    private static final class Directory implements CaptureStateDirectory {
        volatile Optional<CaptureIdentity> identity = Optional.empty();
        volatile boolean offsets;
        volatile boolean writable = true;

        @Override
        public String location() {
            return "/var/lib/queuebox/capture";
        }

        @Override
        public void checkWritable() {
            if (!writable) {
                throw new IllegalStateException("outbox.capture.stateDirectory: '/var/lib/queuebox/capture' is not writable");
            }
        }

        @Override
        public Optional<CaptureIdentity> readIdentity() {
            return identity;
        }

        @Override
        public void writeIdentity(CaptureIdentity value) {
            identity = Optional.of(value);
        }

        @Override
        public boolean hasOffsets() {
            return offsets;
        }

        @Override
        public void clear() {
            identity = Optional.empty();
            offsets = false;
        }
    }

    /** One lock table shared by every supervisor of a test, as the database's would be. */
    private static final class Locks implements CaptureLock {
        final Set<String> held = ConcurrentHashMap.newKeySet();
        private final Map<String, AtomicBoolean> sessions = new ConcurrentHashMap<>();
        final AtomicInteger checks = new AtomicInteger();

        /** The owner's session ends (terminated backend, database restart): the lock is free again. */
        void loseSession(CaptureIdentity identity) {
            AtomicBoolean open = sessions.remove(identity.value());
            if (open != null && open.compareAndSet(true, false)) {
                held.remove(identity.value());
            }
        }

        @Override
        public Optional<Held> tryAcquire(CaptureIdentity identity) {
            if (!held.add(identity.value())) {
                return Optional.empty();
            }
            AtomicBoolean open = new AtomicBoolean(true);
            sessions.put(identity.value(), open);
            return Optional.of(new Held() {
                @Override
                public boolean isHeld() {
                    checks.incrementAndGet();
                    return open.get();
                }

                @Override
                public void close() {
                    if (open.compareAndSet(true, false)) {
                        held.remove(identity.value());
                        sessions.remove(identity.value(), open);
                    }
                }
            });
        }
    }

    private static final class Source {
        volatile boolean slotExists = true;
        volatile List<String> problems = List.of();
    }

    private static final class Connectors implements CaptureConnector.Factory {
        final List<FakeConnector> created = new CopyOnWriteArrayList<>();

        @Override
        public CaptureConnector create(CaptureSettings settings, CaptureIdentity identity) {
            FakeConnector connector = new FakeConnector();
            created.add(connector);
            return connector;
        }

        FakeConnector last() {
            await(() -> !created.isEmpty() && created.get(created.size() - 1).events != null, Duration.ofSeconds(5));
            return created.get(created.size() - 1);
        }
    }

    private static final class FakeConnector implements CaptureConnector {
        volatile Events events;
        volatile boolean closed;

        @Override
        public void start(Events value) {
            events = value;
        }

        @Override
        public void close() {
            closed = true;
        }
    }

    private static final class Wakes implements io.queuebox.ports.WakeSource.WakeListener {
        final List<WakeReason> reasons = new CopyOnWriteArrayList<>();
        final List<UUID> named = new CopyOnWriteArrayList<>();
        final List<List<UUID>> namedTogether = new CopyOnWriteArrayList<>();

        @Override
        public void wake(WakeReason reason) {
            reasons.add(reason);
        }

        @Override
        public void wakeFor(WakeReason reason, UUID eventId) {
            named.add(eventId);
            wake(reason);
        }

        @Override
        public void wakeFor(WakeReason reason, Collection<UUID> eventIds) {
            namedTogether.add(List.copyOf(eventIds));
            wake(reason);
        }

        int count(WakeReason reason) {
            return (int) reasons.stream().filter(reason::equals).count();
        }
    }


    /** Found by the fault-injection suite: a terminated replication connection showed only the connector's wrapper. */
    @Test
    void aConnectorFailureIsDescribedWithItsRootCause() {
        Exception failure = new IllegalStateException("An exception occurred in the change event producer.",
                new java.sql.SQLException("Database connection failed when reading from copy", new java.io.EOFException()));
        assertThat(CaptureSupervisor.describe(failure))
                .startsWith("IllegalStateException: An exception occurred in the change event producer.")
                .endsWith("; cause: SQLException: Database connection failed when reading from copy");
        assertThat(CaptureSupervisor.describe(new IllegalStateException("alone"))).isEqualTo("IllegalStateException: alone");
    }

    /**
     * Review of issue 12 (idleWait): idle workers pick the long reconciliation interval while the supervisor says
     * UP (STARTING counts as UP) and rely on "sources wake the engine when they fail". A fault found at
     * reconciliation sets FAULT without waking delivery, so workers that went idle during STARTING keep waiting the
     * reconciliation interval (30 s by default) instead of falling back to the poll interval.
     */
    @Test
    void aFaultFoundAtReconciliationWakesDeliverySoThatIdleWorkersFallBackToPolling() {
        rows.recordStart(KNOWN, CaptureMode.POSTGRES_LOGICAL,
                new CaptureFingerprint("old_slot", "qb_pub", "public", "queuebox_outbox", "db-host", "orders"));
        directory.identity = Optional.of(KNOWN);
        directory.offsets = true;

        CaptureSupervisor supervisor = started();
        awaitState(supervisor, State.FAULT);
        await(() -> !wakes.reasons.isEmpty(), Duration.ofSeconds(1));

        assertThat(wakes.reasons).as("health went from UP (STARTING) to DOWN (FAULT): delivery must hear of it").isNotEmpty();
    }

    /** Review of issue 12 (describe): the root-cause walk guards only against a cause that is itself. */
    @Test
    void describingAFailureWhoseCausesFormACycleEnds() {
        IllegalStateException outer = new IllegalStateException("An exception occurred in the change event producer.");
        RuntimeException first = new RuntimeException("first");
        RuntimeException second = new RuntimeException("second");
        outer.initCause(first);
        first.initCause(second);
        second.initCause(first); // allowed by Throwable.initCause: only self-causation is refused

        String described = org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(Duration.ofSeconds(2),
                () -> CaptureSupervisor.describe(outer),
                "the supervisor thread would spin here instead of reporting RETRYING and waking delivery");
        assertThat(described).startsWith("IllegalStateException: An exception occurred in the change event producer.");
    }
}
