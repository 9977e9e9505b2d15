package io.queuebox.domain;

import io.queuebox.domain.CaptureReconciliation.Decision;
import io.queuebox.domain.CaptureReconciliation.Fault;
import io.queuebox.domain.CaptureReconciliation.Resume;
import io.queuebox.domain.CaptureReconciliation.StartFresh;
import io.queuebox.domain.CaptureStatus.FaultReason;
import io.queuebox.domain.CaptureStatus.State;
import io.queuebox.ports.CaptureConnector;
import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureLock;
import io.queuebox.ports.CaptureSettings;
import io.queuebox.ports.CaptureSourceInspector;
import io.queuebox.ports.CaptureSourceReport;
import io.queuebox.ports.CaptureStateDirectory;
import io.queuebox.ports.CaptureStateStore;
import io.queuebox.ports.Health;
import io.queuebox.ports.WakeReason;
import io.queuebox.ports.WakeSource;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * Runs capture as the seed page describes it, as a {@link WakeSource} of the delivery engine:
 * checks the state directory and the database, reconciles the state with {@link CaptureReconciliation}
 * under the identity's lock, then runs the connector and restarts it after a failure with
 * {@link CaptureRestartBackoff} (1 s up to 30 s), waking delivery on every attempt.
 *
 * <p>A fault that needs a decision (the reconciliation faults, a state directory that cannot be
 * written, a database not set up for capture) stops capture for good and is reported; it never retries
 * and never touches delivery. Transient errors (the database unreachable while reconciling) are retried
 * with the same backoff. The lock is held from reconciliation until {@link #close()}, and checked at
 * least once per {@link CaptureSettings#reconciliationInterval()} while the connector runs (and before
 * each restart): a lost lock stops the connector and is reported as {@link FaultReason#OWNERSHIP_LOST},
 * then, after the restart backoff, capture reconciles again and takes the lock anew, or reports
 * {@link FaultReason#IDENTITY_OWNED} when another process holds it now.
 */
public final class CaptureSupervisor implements WakeSource {

    private final CaptureSettings settings;
    private final CaptureStateStore stateStore;
    private final CaptureStateDirectory directory;
    private final CaptureLock lock;
    private final CaptureSourceInspector inspector;
    private final CaptureConnector.Factory connectors;
    private final Clock clock;
    private final Supplier<CaptureIdentity> freshIdentities;

    private final ReentrantLock monitor = new ReentrantLock();
    private final Condition changed = monitor.newCondition();
    private boolean closed;
    private Throwable connectorFailure;
    private CaptureConnector connector;
    private CaptureLock.Held held;
    private volatile CaptureStatus status = CaptureStatus.of(State.STARTING, null, "not started", 0);
    // Told of a fault, so that idle workers waiting the long reconciliation interval fall back to polling.
    private volatile WakeListener delivery;
    private Thread thread;

    private CaptureSupervisor(Builder builder) {
        this.settings = builder.settings;
        this.stateStore = builder.stateStore;
        this.directory = builder.directory;
        this.lock = builder.lock;
        this.inspector = builder.inspector;
        this.connectors = builder.connectors;
        this.clock = builder.clock;
        this.freshIdentities = builder.freshIdentities;
        if (!settings.active()) {
            status = CaptureStatus.of(State.DISABLED, null, "capture is disabled; delivery polls", 0);
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Starts supervising on a thread of its own; returns at once. Does nothing when capture is disabled. */
    @Override
    public void start(WakeListener delivery) {
        Objects.requireNonNull(delivery, "delivery");
        if (!settings.active()) {
            return;
        }
        this.delivery = delivery;
        monitor.lock();
        try {
            if (thread != null) {
                throw new IllegalStateException("capture supervisor already started");
            }
            thread = new Thread(() -> supervise(delivery), "queuebox-capture-supervisor");
            thread.setDaemon(true);
            thread.start();
        } finally {
            monitor.unlock();
        }
    }

    /** Where capture stands now. */
    public CaptureStatus status() {
        return status;
    }

    /** Advisory: up while disabled, starting or streaming; down in a fault or while retrying. */
    @Override
    public Health health() {
        CaptureStatus now = status;
        Map<String, Object> details = new LinkedHashMap<>();
        details.put("state", now.state().name());
        now.identity().ifPresent(id -> details.put("identity", id.value()));
        now.fault().ifPresent(f -> details.put("fault", f.name()));
        details.put("consecutiveFailures", now.consecutiveFailures());
        Health base = switch (now.state()) {
            case DISABLED, STARTING, RUNNING -> Health.up(now.message());
            case RETRYING, FAULT, STOPPED -> Health.down(now.message());
        };
        return base.withDetails(details);
    }

    /** Stops the connector, releases the lock and ends the supervising thread. Idempotent. */
    @Override
    public void close() {
        Thread running;
        monitor.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            changed.signalAll();
            running = thread;
        } finally {
            monitor.unlock();
        }
        if (running != null) {
            try {
                running.join(TimeUnit.SECONDS.toMillis(60));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (status.state() != State.FAULT && status.state() != State.DISABLED) {
            status = CaptureStatus.of(State.STOPPED, status.identity().orElse(null), "capture stopped", 0);
        }
    }

    private void supervise(WakeListener delivery) {
        CaptureRestartBackoff backoff = CaptureRestartBackoff.initial();
        try {
            while (true) {
                Optional<CaptureIdentity> identity = Optional.empty();
                while (identity.isEmpty()) {
                    Instant attemptStart = clock.instant();
                    try {
                        identity = reconcile();
                        if (identity.isEmpty()) {
                            return; // a fault: reported, no retry
                        }
                    } catch (RuntimeException transientError) {
                        releaseLock();
                        backoff = backoff.failedAfter(Duration.between(attemptStart, clock.instant()));
                        if (!retryAfter(null, transientError, backoff, delivery)) {
                            return;
                        }
                    }
                }
                boolean restart = false;
                while (true) {
                    Instant attemptStart = clock.instant();
                    Throwable failure;
                    try {
                        RunEnd end = runConnector(identity.get(), delivery, restart);
                        if (end == RunEnd.CLOSED_OR_FAULT) {
                            return;
                        }
                        if (end == RunEnd.OWNERSHIP_LOST) {
                            backoff = backoff.failedAfter(Duration.between(attemptStart, clock.instant()));
                            ownershipLost(identity.get(), backoff);
                            stopConnector();
                            releaseLock();
                            awaitClosed(backoff.delay());
                            if (isClosed()) {
                                return;
                            }
                            break; // reconcile again: takes the lock anew, or reports who owns it now
                        }
                        failure = end.failure();
                    } catch (RuntimeException startError) {
                        stopConnector();
                        failure = startError;
                    }
                    restart = true;
                    backoff = backoff.failedAfter(Duration.between(attemptStart, clock.instant()));
                    if (!retryAfter(identity.get(), failure, backoff, delivery)) {
                        return;
                    }
                }
            }
        } finally {
            stopConnector();
            releaseLock();
        }
    }

    /**
     * Lost ownership is reported as the fault {@link FaultReason#OWNERSHIP_LOST}, but unlike the other faults it
     * needs no decision: the state directory, the row and the settings did not change, so taking the lock again
     * is what a restart of QueueBox would do. Another process that took the lock meanwhile is then reported as
     * {@link FaultReason#IDENTITY_OWNED}, which is not retried.
     */
    private void ownershipLost(CaptureIdentity identity, CaptureRestartBackoff backoff) {
        fault(FaultReason.OWNERSHIP_LOST, identity, "the database session holding the lock of identity " + identity
                + " was lost (a terminated session, a database restart or a broken connection), so this process may"
                + " no longer be the only owner; capture stopped, delivery goes on through SQL; taking the lock"
                + " again in " + backoff.delay().toSeconds() + " s");
    }

    /** Reports the failure, wakes delivery, waits out the backoff; false when closed meanwhile. */
    private boolean retryAfter(CaptureIdentity identity, Throwable failure, CaptureRestartBackoff backoff,
                               WakeListener delivery) {
        retrying(identity, failure, backoff);
        delivery.wake(WakeReason.CAPTURE_RESTART);
        awaitClosed(backoff.delay());
        return !isClosed();
    }

    /** The identity to run as, or empty after reporting a fault. */
    private Optional<CaptureIdentity> reconcile() {
        status = CaptureStatus.of(State.STARTING, null, "reconciling capture state", status.consecutiveFailures());
        try {
            directory.checkWritable();
        } catch (IllegalStateException notWritable) {
            return fault(FaultReason.STATE_DIRECTORY_NOT_WRITABLE, null, notWritable.getMessage());
        }
        CaptureSourceReport report = inspector.inspect(settings);
        Optional<CaptureIdentity> fileIdentity = directory.readIdentity();
        CaptureIdentity fresh = freshIdentities.get();
        CaptureIdentity toLock = CaptureReconciliation.identityToLock(fileIdentity, fresh);
        Optional<CaptureLock.Held> acquired = lock.tryAcquire(toLock);
        acquired.ifPresent(this::holding);
        Decision decision = CaptureReconciliation.decide(stateStore.findAll(), fileIdentity, directory.hasOffsets(),
                settings.fingerprint(), settings.mode(), report.slotExists(), acquired.isPresent(), fresh);
        if (decision instanceof Fault fault) {
            releaseLock();
            return fault(FaultReason.valueOf(fault.reason().name()), toLock, fault.message());
        }
        CaptureIdentity identity = decision instanceof StartFresh start ? start.identity()
                : ((Resume) decision).identity();
        // After the state faults: a changed setting says more than the new target not being set up yet.
        if (!report.ready()) {
            releaseLock();
            return fault(FaultReason.SOURCE_NOT_READY, identity, String.join(" ", report.problems()));
        }
        // The row first: a crash before the file is written then reads as STATE_MISSING, which an operator
        // resolves with a reset, rather than as files of an unknown instance.
        stateStore.recordStart(identity, settings.mode(), settings.fingerprint());
        if (decision instanceof StartFresh) {
            directory.writeIdentity(identity);
        }
        return Optional.of(identity);
    }

    /** How one run of a connector ended: closed or a fault reported, the lock lost, or the connector failed. */
    private record RunEnd(Kind kind, Throwable failure) {
        enum Kind { CLOSED_OR_FAULT, OWNERSHIP_LOST, FAILED }

        /** Closed, or a fault was reported: supervising ends. */
        static final RunEnd CLOSED_OR_FAULT = new RunEnd(Kind.CLOSED_OR_FAULT, null);
        /** The lock is no longer held; the connector may still run. */
        static final RunEnd OWNERSHIP_LOST = new RunEnd(Kind.OWNERSHIP_LOST, null);

        static RunEnd failed(Throwable failure) {
            return new RunEnd(Kind.FAILED, Objects.requireNonNull(failure, "failure"));
        }
    }

    /**
     * Runs one connector until it fails, until the lock is found lost (checked at least once per reconciliation
     * interval), or until close or a fault. Reconciliation has just checked the lock and the source before the
     * first run; a restart checks them again.
     */
    private RunEnd runConnector(CaptureIdentity identity, WakeListener delivery, boolean restart) {
        if (restart) {
            if (!lockStillHeld()) {
                return RunEnd.OWNERSHIP_LOST;
            }
            if (!sourceStillValid(identity)) {
                return RunEnd.CLOSED_OR_FAULT;
            }
        }
        CaptureConnector started = connectors.create(settings, identity);
        monitor.lock();
        try {
            if (closed) {
                return RunEnd.CLOSED_OR_FAULT;
            }
            connectorFailure = null;
            connector = started;
        } finally {
            monitor.unlock();
        }
        status = CaptureStatus.of(State.RUNNING, identity, "streaming as identity " + identity,
                status.consecutiveFailures());
        recordStatus(identity, "RUNNING", null);
        delivery.wake(WakeReason.CAPTURE_RESTART);
        started.start(new CaptureConnector.Events() {
            @Override
            public void wake(WakeReason reason) {
                delivery.wake(reason);
            }

            @Override
            public void wakeFor(WakeReason reason, UUID eventId) {
                delivery.wakeFor(reason, eventId);
            }

            @Override
            public void wakeFor(WakeReason reason, Collection<UUID> eventIds) {
                delivery.wakeFor(reason, eventIds);
            }

            @Override
            public void failed(Throwable error) {
                monitor.lock();
                try {
                    connectorFailure = error;
                    changed.signalAll();
                } finally {
                    monitor.unlock();
                }
            }
        });
        RunEnd end = awaitEnd();
        if (end != RunEnd.OWNERSHIP_LOST) {
            stopConnector();
        }
        return end;
    }

    /** Whether the lock is still held: a round trip to the database, made outside the monitor. */
    private boolean lockStillHeld() {
        CaptureLock.Held owner = currentLock();
        return owner != null && owner.isHeld();
    }

    /** The slot and source still there; otherwise reports the fault. */
    private boolean sourceStillValid(CaptureIdentity identity) {
        CaptureSourceReport report = inspector.inspect(settings);
        if (!report.slotExists() && directory.hasOffsets()) {
            // Starting now would let the connector create a new slot and silently skip the gap.
            fault(FaultReason.SLOT_MISSING, identity, "the replication slot '" + settings.fingerprint().slot()
                    + "' is missing, but the state directory holds offsets of identity " + identity);
            return false;
        }
        if (!report.ready()) {
            fault(FaultReason.SOURCE_NOT_READY, identity, String.join(" ", report.problems()));
            return false;
        }
        return true;
    }

    private void retrying(CaptureIdentity identity, Throwable error, CaptureRestartBackoff backoff) {
        String message = "capture connector failed (" + describe(error) + "); restart " + backoff.consecutiveFailures()
                + " in " + backoff.delay().toSeconds() + " s";
        status = CaptureStatus.of(State.RETRYING, identity, message, backoff.consecutiveFailures());
        if (identity != null) {
            recordStatus(identity, "RETRYING", message);
        }
    }

    private Optional<CaptureIdentity> fault(FaultReason reason, CaptureIdentity identity, String message) {
        status = CaptureStatus.fault(reason, identity, reason + ": " + message);
        WakeListener listener = delivery;
        if (listener != null) {
            listener.wake(WakeReason.CAPTURE_RESTART);
        }
        if (identity != null && isRecorded(identity)) {
            recordStatus(identity, "FAULT", reason + ": " + message);
        }
        return Optional.empty();
    }

    /** Whether the identity has a row; false when the database cannot tell (a lost lock often means it is down). */
    private boolean isRecorded(CaptureIdentity identity) {
        try {
            return stateStore.find(identity).isPresent();
        } catch (RuntimeException unreachable) {
            return false;
        }
    }

    private void recordStatus(CaptureIdentity identity, String state, String reason) {
        try {
            stateStore.recordStatus(identity, state, reason);
        } catch (RuntimeException ignored) {
            // Status is for operators; failing to record it must not change what capture does.
        }
    }

    /**
     * Waits for the connector to fail or for close, and checks the lock every reconciliation interval meanwhile:
     * a lock backend that was terminated, or a database that restarted while the replication connection
     * survived or reconnected, is noticed within one interval (plus the check's round trip).
     */
    private RunEnd awaitEnd() {
        long interval = settings.reconciliationInterval().toNanos();
        while (true) {
            monitor.lock();
            try {
                long nanos = interval;
                while (!closed && connectorFailure == null && nanos > 0) {
                    try {
                        nanos = changed.awaitNanos(nanos);
                    } catch (InterruptedException e) {
                        // Only close() ends supervising; the flag is cleared by the exception, keep waiting.
                    }
                }
                if (closed) {
                    return RunEnd.CLOSED_OR_FAULT;
                }
                if (connectorFailure != null) {
                    return RunEnd.failed(connectorFailure);
                }
            } finally {
                monitor.unlock();
            }
            if (!lockStillHeld() && !isClosed()) {
                return RunEnd.OWNERSHIP_LOST;
            }
        }
    }

    private void awaitClosed(Duration delay) {
        monitor.lock();
        try {
            long nanos = delay.toNanos();
            while (!closed && nanos > 0) {
                nanos = changed.awaitNanos(nanos);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            monitor.unlock();
        }
    }

    private boolean isClosed() {
        monitor.lock();
        try {
            return closed;
        } finally {
            monitor.unlock();
        }
    }

    private void holding(CaptureLock.Held acquired) {
        monitor.lock();
        try {
            held = acquired;
        } finally {
            monitor.unlock();
        }
    }

    private CaptureLock.Held currentLock() {
        monitor.lock();
        try {
            return held;
        } finally {
            monitor.unlock();
        }
    }

    private void stopConnector() {
        CaptureConnector running;
        monitor.lock();
        try {
            running = connector;
            connector = null;
        } finally {
            monitor.unlock();
        }
        if (running != null) {
            running.close();
        }
    }

    private void releaseLock() {
        CaptureLock.Held toRelease;
        monitor.lock();
        try {
            toRelease = held;
            held = null;
        } finally {
            monitor.unlock();
        }
        if (toRelease != null) {
            try {
                toRelease.close();
            } catch (RuntimeException ignored) {
                // A lost session already released the lock on the database side.
            }
        }
    }

    /**
     * The failure and, when it wraps another, its root cause: connectors wrap every fault in the same generic
     * exception ("An exception occurred in the change event producer"), and the cause is what tells an
     * operator what happened (a terminated replication connection, a dropped slot).
     */
    static String describe(Throwable error) {
        // Throwable.initCause refuses only a cause that is the throwable itself: A -> B -> A is possible.
        java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        Throwable root = error;
        seen.add(root);
        while (root.getCause() != null && seen.add(root.getCause())) {
            root = root.getCause();
        }
        String described = simple(error);
        if (root != error) {
            Throwable telling = root.getMessage() == null && root != error.getCause() ? parentOf(error, root) : root;
            described += "; cause: " + simple(telling);
        }
        return described;
    }

    private static Throwable parentOf(Throwable top, Throwable root) {
        Throwable parent = top;
        while (parent.getCause() != root && parent.getCause() != null) {
            parent = parent.getCause();
        }
        return parent.getMessage() == null ? root : parent;
    }

    private static String simple(Throwable error) {
        String text = error.getMessage();
        return error.getClass().getSimpleName() + (text == null ? "" : ": " + text);
    }

    /** Builds a {@link CaptureSupervisor}; every port is required. */
    public static final class Builder {
        private CaptureSettings settings;
        private CaptureStateStore stateStore;
        private CaptureStateDirectory directory;
        private CaptureLock lock;
        private CaptureSourceInspector inspector;
        private CaptureConnector.Factory connectors;
        private Clock clock = Clock.systemUTC();
        private Supplier<CaptureIdentity> freshIdentities = CaptureIdentity::random;

        private Builder() {
        }

        public Builder settings(CaptureSettings value) {
            this.settings = Objects.requireNonNull(value, "settings");
            return this;
        }

        public Builder stateStore(CaptureStateStore value) {
            this.stateStore = Objects.requireNonNull(value, "stateStore");
            return this;
        }

        public Builder stateDirectory(CaptureStateDirectory value) {
            this.directory = Objects.requireNonNull(value, "stateDirectory");
            return this;
        }

        public Builder lock(CaptureLock value) {
            this.lock = Objects.requireNonNull(value, "lock");
            return this;
        }

        public Builder inspector(CaptureSourceInspector value) {
            this.inspector = Objects.requireNonNull(value, "inspector");
            return this;
        }

        public Builder connectors(CaptureConnector.Factory value) {
            this.connectors = Objects.requireNonNull(value, "connectors");
            return this;
        }

        public Builder clock(Clock value) {
            this.clock = Objects.requireNonNull(value, "clock");
            return this;
        }

        /** Where new identities come from; random UUIDs by default. */
        public Builder freshIdentities(Supplier<CaptureIdentity> value) {
            this.freshIdentities = Objects.requireNonNull(value, "freshIdentities");
            return this;
        }

        public CaptureSupervisor build() {
            requireSet(settings, "settings");
            if (settings.active()) {
                requireSet(stateStore, "stateStore");
                requireSet(directory, "stateDirectory");
                requireSet(lock, "lock");
                requireSet(inspector, "inspector");
                requireSet(connectors, "connectors");
            }
            return new CaptureSupervisor(this);
        }

        private static void requireSet(Object value, String name) {
            if (value == null) {
                throw new IllegalStateException(name + " is required when capture is enabled");
            }
        }
    }
}
