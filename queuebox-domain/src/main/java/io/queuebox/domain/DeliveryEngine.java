package io.queuebox.domain;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.DeliveryListener;
import io.queuebox.ports.Health;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.Park;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.ports.Reschedule;
import io.queuebox.ports.WakeReason;
import io.queuebox.ports.WakeSource;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.random.RandomGenerator;

/**
 * The delivery engine: claims due outbox rows, publishes them, and records what became of them.
 *
 * <h2>Loop</h2>
 * Each of {@link DeliverySettings#workers()} worker threads ({@code queuebox-worker-N}, not daemon)
 * repeats: claim with {@link DeliverySettings#claimRequest()}; if nothing was claimed, wait for the next
 * wake; otherwise publish (renewing the lease every third of its length while the publish runs), write
 * the {@link OutcomePlan} with one bulk store call per kind ({@code markSent}, {@code reschedule},
 * {@code park}, {@code release}), report to the {@link DeliveryListener}, and, when the batch was full,
 * claim again at once ({@link WakeReason#FULL_BATCH}). That is the loop at
 * {@link DeliverySettings#pipelineDepth()} 1, run on the worker thread.
 *
 * <h2>Pipelining</h2>
 * At depth 2 or more each worker is three threads: the claimer ({@code queuebox-worker-N}), its publish stage
 * ({@code queuebox-worker-N-publish}) and its record stage ({@code queuebox-worker-N-record}), none daemon. The
 * publish stage publishes the worker's batches one at a time, in the order claimed. A batch whose publish was clean
 * (every row acked) it hands to the record stage, which marks it sent while the publish stage publishes the next;
 * any other outcome (a retry, a park, a row not attempted, a publish that threw) the publish stage records itself
 * before it publishes again. The record stage holds one batch at a time: the publish stage waits for it before it
 * hands over the next, and only then checks the lease of the batch it publishes next. The claimer hands a batch to
 * the stage and claims the next at once if the batch was full, so the claim of batch N+1 overlaps the broker confirms
 * of N, and the publish of N+1 the outcome writes of N. Order per aggregate needs no wait for those writes: every
 * batch the worker claims while N is unrecorded was claimed while N held its rows. At most {@code pipelineDepth}
 * batches of a worker are claimed and not yet recorded (queued, publishing or being recorded): the claimer waits
 * for a free slot before it claims. A batch is in the renewer's care from the start of its publish until the publish
 * returns, not while it waits: a stuck stage cannot hold rows past their lease, and the stage hands back, without
 * publishing, a batch whose lease lapsed (or would before the next renewal) while it waited. After a failed batch
 * (or a failed record on the record stage) the stage publishes nothing until the error pause since the failure is over: a batch queued behind the failed
 * one, or claimed while it was out (that claim can take the rows the failure just released), waits for the pause as
 * it would have waited to be claimed in the serial loop. Order per aggregate and fencing stay the store's: a claim never takes a row whose earlier sibling is
 * leased (so held by a batch still queued or publishing), and every outcome is written with its batch's lease.
 * What the serial loop decides after a batch the stage asks of its claimer through two flags the claimer reads
 * before its next claim (and while it waits): after a full batch, or one during whose flight a wake-up about new
 * rows came, claim again (the claim that overlapped it may have found its aggregates held back); after a failed
 * batch, pause first. A look asked for because of news is a second look as the serial loop's is: it holds the rows
 * that news named for itself, and after a partial batch it is not asked for while a claim that started after a named
 * row's news is still looking for it. A claimer whose stage still holds a batch takes no wake-up ticket: it is busy, as a serial
 * worker is while it publishes, so wake-ups while a batch is out still coalesce into one more claim.
 *
 * <h2>Waking</h2>
 * An idle worker wakes at the earliest of ({@link WakeSchedule}): the wake interval, the next retry this
 * engine scheduled, the next lease it knows to expire, a wake-up through {@link #wake} or a
 * {@link WakeSource}, and shutdown. {@link OutboxStore#timeUntilNextDue()} is asked once at start, to
 * learn about retries left by a previous run; the idle loop makes exactly one store call, the claim, per
 * wake interval: while no batch is in flight only worker 1 claims on the interval; the other workers wait
 * for a wake-up, a retry or lease deadline, or a batch going in flight (then they poll on the interval).
 * Wake-ups coalesce: any number of them during a claim cause one more claim. A wake-up about new rows
 * wakes one idle worker, not all of them (the others would only find the rows taken); a full batch wakes
 * one more, so a backlog brings every worker in while a trickle keeps one busy.
 *
 * <h2>Errors</h2>
 * A store or publisher exception is reported through {@link DeliveryListener#onError} and never stops
 * the engine. A publish exception (or {@link Error}) counts as a retriable failure of every row of the
 * batch; rows the publisher answered {@link PublishOutcome.NotAttempted} are released uncharged. After any
 * error, and after a batch with nothing acked and a row not attempted (the broker is likely down), the
 * worker pauses for {@code min(wakeInterval, 1 s)} before it claims again. An update that
 * touches fewer rows than planned (the lease expired and another claimer took the rows) is reported
 * through {@link DeliveryListener#onLeaseLost}.
 *
 * <h2>Housekeeping</h2>
 * With {@link DeliverySettings#purgeEnabled()}, a {@code queuebox-housekeeping} thread deletes sent rows
 * older than the retention every purge interval, calling {@link OutboxStore#purgeSent} again while it
 * returns a full batch.
 *
 * <h2>Shutdown</h2>
 * {@link #stop(Duration)} stops claiming, wakes every thread, and lets in-flight publishes (and batches queued
 * for a publish stage) finish and record their outcomes until the deadline; a claim that returns after shutdown
 * began is released at once. After the deadline, queued batches whose publish never started are released, on a
 * daemon thread so that a hung store cannot hold up the caller; the
 * engine stops renewing leases but never releases the lease of a batch whose publish is still running: the
 * publisher might still send it, and a released row could be claimed and sent by another relay at the same time.
 * Such a batch keeps its lease until the lease lapses (or until its worker or stage, once the publish returns,
 * records the outcome). A batch being recorded on a record stage is never released either: stop() waits for its record
 * like any publish, and after the deadline leaves it to finish. Wake sources are
 * closed; the store and the publisher are not: their owner does that, after the engine stopped.
 *
 * <h2>Threads that fail</h2>
 * A worker, the lease renewer and the housekeeping thread survive anything a cycle throws, {@link Error}s
 * included (a {@code LinkageError} from an adapter, an {@code AssertionError}): it is reported through
 * {@link DeliveryListener#onError} with the step {@code "worker"}, {@code "publish-stage"}, {@code "record-stage"},
 * {@code "renewer"} or {@code "housekeeping"}, the thread (a publish or record stage: its worker) pauses as after any
 * error and carries on, and {@link #health()} is
 * DOWN with the thread's name and the reason until one of its cycles completes. A thread that ends anyway
 * keeps {@link #health()} DOWN. A listener that throws, even an Error, is ignored: it only observes. The engine stops
 * its threads through {@link #stop}, never by interrupting them: an interrupt flag a publisher leaves set (after its
 * own wait was interrupted) is cleared once the publish returns.
 *
 * <h2>Time</h2>
 * Instants (retry due times, lease expiry, elapsed times) come from the injected {@link Clock}; waiting
 * uses {@link java.util.concurrent.locks.Condition#awaitNanos}. The clock must advance with real time.
 */
public final class DeliveryEngine implements AutoCloseable {

    private static final Duration MAX_ERROR_PAUSE = Duration.ofSeconds(1);
    private static final Duration PEER_IDLE_WAIT = Duration.ofDays(1);
    // Enough for the log to run seconds behind at thousands of rows per second; about 100 bytes an id.
    private static final int MIN_RECENT_CLAIMS = 16_384;
    private static final int MAX_RECENT_CLAIMS = 262_144;

    private enum State { NEW, RUNNING, STOPPING, STOPPED }

    private final OutboxStore store;
    private final MessagePublisher publisher;
    private final DeliverySettings settings;
    private final Clock clock;
    private final DeliveryListener listener;
    private final List<WakeSource> wakeSources;
    private final RandomGenerator random;
    private final ClaimRequest claimRequest;
    private final Duration errorPause;

    private final AtomicReference<State> state = new AtomicReference<>(State.NEW);
    private final WakeSignal signal = new WakeSignal();
    private final WakeSignal renewerSignal = new WakeSignal();
    private final WakeSignal watchSignal = new WakeSignal();
    private final Deadlines deadlines;
    private final NamedWakes namedWakes;
    private final Map<LeaseToken, InFlightBatch> inFlight = new ConcurrentHashMap<>();
    private final Map<String, String> deadThreads = new ConcurrentHashMap<>();
    private final Map<String, String> failingThreads = new ConcurrentHashMap<>();
    private final List<Thread> threads = new ArrayList<>();
    private final List<Stage> stages = new ArrayList<>();
    private volatile CountDownLatch finished;
    // Monotonic time the latest claim of any worker started, and the idle wait the workers last chose: when
    // a peer polls while a batch is in flight.
    private volatile long latestClaimStartNanos = System.nanoTime();
    private volatile Duration currentIdleWait;
    // When the claim watch last handed the first worker's claim to an idle worker (claim watch thread only).
    private long watchTicketNanos = System.nanoTime() - Duration.ofDays(1).toNanos();
    // Whether the first worker (the one that polls on the interval and takes the deadlines) is waiting for them now;
    // while it is not (claiming, publishing, writing outcomes, pausing), the claim watch stands in.
    private volatile boolean pollerWaiting;
    // When a cycle of any worker last failed: the claim watch stands in for nobody during the error pause after it.
    private volatile long failedAtNanos = System.nanoTime() - Duration.ofDays(1).toNanos();
    /** When worker 1's latest error pause ends (see pausesThenClaims). */
    private volatile long pollerPauseEndsNanos = failedAtNanos;
    private final HeldElsewhereBackoff heldElsewhere = new HeldElsewhereBackoff();
    private Thread renewer;

    private DeliveryEngine(Builder builder) {
        this.store = builder.store;
        this.publisher = builder.publisher;
        this.settings = builder.settings;
        this.clock = builder.clock;
        this.listener = new SafeListener(builder.listener);
        this.wakeSources = List.copyOf(builder.wakeSources);
        this.random = builder.random == null ? new ThreadLocalRandomGenerator() : new SynchronizedRandom(builder.random);
        this.claimRequest = settings.claimRequest();
        this.errorPause = settings.wakeInterval().compareTo(MAX_ERROR_PAUSE) < 0 ? settings.wakeInterval()
                : MAX_ERROR_PAUSE;
        this.deadlines = new Deadlines(clock);
        this.currentIdleWait = settings.wakeInterval();
        this.namedWakes = new NamedWakes((int) Math.min(MAX_RECENT_CLAIMS, Math.max(MIN_RECENT_CLAIMS,
                4L * settings.batchSize() * settings.workers() * settings.pipelineDepth())), builder.namedWakeHoldLimit);
    }

    public static Builder builder() {
        return new Builder();
    }

    /**
     * Starts the workers, the lease renewer, the housekeeping thread (if purging is enabled) and the wake
     * sources. Returns at once.
     *
     * @throws IllegalStateException when the engine was started before
     */
    public void start() {
        if (!state.compareAndSet(State.NEW, State.RUNNING)) {
            throw new IllegalStateException("the delivery engine was already started (state " + state.get() + ")");
        }
        boolean pipelined = settings.pipelineDepth() > 1;
        int counted = settings.workers() * (pipelined ? 3 : 1) + (settings.purgeEnabled() ? 1 : 0);
        finished = new CountDownLatch(counted);
        for (int i = 1; i <= settings.workers(); i++) {
            int index = i;
            Stage stage = pipelined ? new Stage(settings.pipelineDepth()) : null;
            if (stage != null) {
                stages.add(stage);
            }
            threads.add(thread("queuebox-worker-" + i, () -> runWorker(index, stage)));
            if (stage != null) {
                threads.add(thread("queuebox-worker-" + i + "-publish", () -> runStage(stage)));
                threads.add(thread("queuebox-worker-" + i + "-record", () -> runRecordStage(stage)));
            }
        }
        if (settings.purgeEnabled()) {
            threads.add(thread("queuebox-housekeeping", this::runHousekeeping));
        }
        renewer = thread("queuebox-lease-renewer", this::runRenewer);
        threads.forEach(Thread::start);
        renewer.start();
        if (settings.workers() > 1) {
            thread("queuebox-claim-watch", this::runClaimWatch).start();
        }
        for (WakeSource source : wakeSources) {
            try {
                source.start(asWakeListener());
            } catch (RuntimeException e) {
                listener.onError("wakeSource.start", e);
            }
        }
    }

    /**
     * Asks the engine to claim now. Thread-safe, returns at once; wake-ups that arrive while the workers
     * are busy coalesce into one more claim. A wake-up about new rows ({@link WakeReason#CAPTURE},
     * {@link WakeReason#EXTERNAL} and the like) wakes one idle worker, whose full batch then wakes the next;
     * {@link WakeReason#CAPTURE_RESTART} and {@link WakeReason#NOTIFY_RESTART} wake every worker, since each
     * recomputes how long it may wait.
     * Ignored unless the engine is running.
     */
    public void wake(WakeReason reason) {
        Objects.requireNonNull(reason, "reason");
        if (state.get() == State.RUNNING) {
            if (reason == WakeReason.CAPTURE_RESTART || reason == WakeReason.NOTIFY_RESTART) {
                signal.wake(reason);
            } else {
                signal.wakeOne(reason);
            }
        }
    }

    /**
     * {@link #wake}, unless this engine itself claimed the row {@code eventId} recently: then the claim the
     * wake-up would start can only come back empty (the log that reported the row runs behind the table, and
     * the row's own claim came first), so nothing is done. For {@link WakeReason#CAPTURE}, while a claim is
     * under way the wake-up waits for it, and wakes the engine only if no claim took the row. A row this engine
     * released is due again and wakes as usual. Skipping never costs a message: the row is claimed already, and
     * the wake interval still looks at the table.
     */
    public void wakeFor(WakeReason reason, UUID eventId) {
        Objects.requireNonNull(reason, "reason");
        if (eventId == null) {
            wake(reason);
        } else {
            wakeFor(reason, List.of(eventId));
        }
    }

    /**
     * {@link #wakeFor(WakeReason, UUID)} for the rows of one commit: one wake-up at most. Any reason but
     * {@link WakeReason#CAPTURE} and {@link WakeReason#NOTIFY} names rows straight after their commit
     * ({@code QueueBox.writeAndCommit}): a claim under way then started before the commit and cannot be taking
     * them, so nothing waits for it. The log and the database's notifications report a commit after it happened,
     * when a claim that takes its rows may be under way: the wake-up waits for that claim.
     * A worker whose batch was in flight meanwhile looks again after it only while a row named here is still
     * unclaimed (its own batch may have held it back), not once an idle worker took it, nor while a claim
     * that started after the row was named is still looking for it (the row is held for that claim).
     */
    public void wakeFor(WakeReason reason, Collection<UUID> eventIds) {
        Objects.requireNonNull(reason, "reason");
        Objects.requireNonNull(eventIds, "eventIds");
        if (state.get() != State.RUNNING) {
            return;
        }
        if (reason == WakeReason.CAPTURE_RESTART || reason == WakeReason.NOTIFY_RESTART
                || eventIds.stream().anyMatch(Objects::isNull)) {
            wake(reason);
            return;
        }
        boolean mayHold = reason == WakeReason.CAPTURE || reason == WakeReason.NOTIFY;
        List<UUID> waking = new ArrayList<>(eventIds.size());
        for (UUID id : eventIds) {
            // A row that wakes the engine is known as awaiting its claim from here, before the news is seen.
            if (namedWakes.arrived(id, reason, mayHold)) {
                waking.add(id);
            }
        }
        if (!waking.isEmpty()) {
            namedWakes.numbered(waking, signal.wakeOne(reason, true));
        }
        // Also when some rows of the call woke the engine: others may have been held meanwhile (a poll of the log names
        // many rows, and a claim may start while they are looked at), and only the watch ends a hold that outlives it.
        letTheWatchEndHolds();
    }

    /** This engine as the listener a {@link WakeSource} calls. */
    public WakeSource.WakeListener asWakeListener() {
        return new WakeSource.WakeListener() {
            @Override
            public void wake(WakeReason reason) {
                DeliveryEngine.this.wake(reason);
            }

            @Override
            public void wakeFor(WakeReason reason, UUID eventId) {
                DeliveryEngine.this.wakeFor(reason, eventId);
            }

            @Override
            public void wakeFor(WakeReason reason, Collection<UUID> eventIds) {
                DeliveryEngine.this.wakeFor(reason, eventIds);
            }
        };
    }

    /** Whether the engine was started and not yet stopped. */
    public boolean isRunning() {
        return state.get() == State.RUNNING;
    }

    /** The settings the engine runs with. */
    public DeliverySettings settings() {
        return settings;
    }

    /** {@link #stop(Duration)} with {@link DeliverySettings#shutdownDeadline()}. */
    @Override
    public void close() {
        stop(settings.shutdownDeadline());
    }

    /**
     * Stops the engine: no new claims; in-flight publishes may finish and record their outcomes until
     * {@code deadline}; after it, leases are no longer renewed, and batches still publishing keep theirs
     * until it lapses. Wake sources are closed; the store and the publisher are not. Idempotent.
     *
     * @return whether every worker and the housekeeping thread finished within the deadline
     */
    public boolean stop(Duration deadline) {
        Objects.requireNonNull(deadline, "deadline");
        if (state.compareAndSet(State.NEW, State.STOPPED)) {
            return true;
        }
        if (!state.compareAndSet(State.RUNNING, State.STOPPING)) {
            return awaitFinished(deadline);
        }
        signal.shutdown();
        stages.forEach(Stage::close);
        boolean inTime = false;
        try {
            inTime = awaitFinished(deadline);
            if (!inTime) {
                // Batches whose publish has not started go back without holding up the caller (the store may
                // hang); those still publishing keep their lease until it lapses: see "Shutdown" above.
                releaseInBackground(stages.stream().flatMap(stage -> stage.drainUnstarted().stream()).toList());
            }
        } finally {
            renewerSignal.shutdown();
            watchSignal.shutdown();
            for (WakeSource source : wakeSources) {
                try {
                    source.close();
                } catch (RuntimeException e) {
                    listener.onError("wakeSource.close", e);
                }
            }
            state.set(State.STOPPED);
        }
        return inTime;
    }

    /**
     * Releases batches that were claimed and never published, on a daemon thread: stop() returns by its deadline
     * whatever the store does, and a release that fails (or never runs, when the owner closes the store first)
     * only leaves the rows to lapse with their lease, which nothing renews any more.
     */
    private void releaseInBackground(List<Handed> unstarted) {
        if (unstarted.isEmpty()) {
            return;
        }
        Thread releaser = new Thread(() -> {
            for (Handed handed : unstarted) {
                try {
                    release(handed.batch().lease(), handed.flight().eventIds());
                } catch (Throwable e) {
                    listener.onError("release", e);
                }
            }
        }, "queuebox-release-on-stop");
        releaser.setDaemon(true);
        releaser.start();
    }

    private boolean awaitFinished(Duration deadline) {
        if (finished == null) {
            return true;
        }
        try {
            return finished.await(deadline.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return finished.getCount() == 0;
        }
    }

    private Thread thread(String name, Runnable body) {
        Thread thread = new Thread(body, name);
        thread.setDaemon(false);
        thread.setUncaughtExceptionHandler((dead, error) -> {
            deadThreads.put(dead.getName(), describe(error));
            listener.onError("thread", error);
        });
        return thread;
    }

    /**
     * UP while the engine runs with every thread alive; DOWN before start, after stop, while a thread's
     * cycles end with an {@link Error} (until one completes), or when a thread of the engine ended
     * unexpectedly: each named, with the reason, since delivery may then have stalled.
     */
    public Health health() {
        State current = state.get();
        if (current != State.RUNNING) {
            return Health.down("delivery engine " + current.name().toLowerCase(Locale.ROOT));
        }
        if (!deadThreads.isEmpty()) {
            return Health.down("delivery engine thread ended: " + new TreeMap<>(deadThreads));
        }
        if (!failingThreads.isEmpty()) {
            return Health.down("delivery engine thread failing: " + new TreeMap<>(failingThreads));
        }
        return Health.up("delivery engine running, " + settings.workers() + " worker(s)"
                + (settings.pipelineDepth() > 1 ? ", pipeline depth " + settings.pipelineDepth() : ""));
    }

    // ---------------------------------------------------------------- workers

    /**
     * How a worker's cycle ended; {@code HANDED}: a partial batch went to the worker's publish stage;
     * {@code HOLDING}: a partial batch that held back a later row of one of its aggregates (ClaimBatch holdsBack).
     */
    private enum Cycle { EMPTY, PARTIAL, HOLDING, FULL, FAILED, HANDED }

    private void runWorker(int index, Stage stage) {
        try {
            if (index == 1) {
                learnDeadlinesLeftByEarlierRuns();
            }
            WakeSignal.Planner planner = index == 1 ? this::planPollerWake : this::planPeerWake;
            if (stage != null) {
                WakeSignal.Planner idle = planner;
                // The stage asks for a claim (or a pause) through flags, then makes waiters replan: see
                // publishAndRecordSurviving.
                planner = left -> stage.wantsClaim() ? new WakeSchedule.Wake(Duration.ZERO, stage.wantedReason())
                        : idle.plan(left);
            }
            long seen = signal.wakes();
            WakeReason reason = null;
            // Whether this claim follows the worker's own batch (full, or holding rows back) rather than a wait.
            boolean continuing = false;
            // The news a serial second look is for (NamedWakes.secondLookStarted), else NO_SECOND_LOOK.
            long secondLookAfter = NO_SECOND_LOOK;
            boolean first = index == 1;
            while (!signal.isShutdown()) {
                if (first) {
                    pollerWaiting = false;
                }
                if (stage != null) {
                    // At most pipelineDepth batches claimed and not yet recorded: wait for the stage to record one.
                    if (!stage.awaitSlot()) {
                        break;
                    }
                    long stageFailedNanos = stage.takePause();
                    if (stageFailedNanos != Stage.NO_PAUSE) {
                        // The stage's batch failed (or looked like an outage): pause as a serial worker would, and
                        // claim again by the same rule.
                        if (pausesThenClaims(first, stageFailedNanos)) {
                            reason = WakeReason.INTERVAL;
                            seen = signal.wakes();
                            // Claims now even if a stage failed during the pause: what it claims is published only
                            // once that failure's pause is over (awaitTheStagePause). Pausing again here kept worker 1
                            // from claiming, so an idle peer found no claim since its failure and claimed into the
                            // outage too (DeliveryEngineFailedPeerReviewTest).
                        } else {
                            WakeSignal.Woken woken = signal.isShutdown() ? null : awaitIdle(first, seen, planner, stage);
                            if (woken == null) {
                                break;
                            }
                            reason = woken.reason();
                            seen = woken.wakesSeen();
                            // What woke it may be the stage's next failure: its pause comes before any claim.
                            continue;
                        }
                    }
                    // This claim answers any claim the stage asked for so far, and, from an idle worker, the
                    // news a pending ticket brings (it would take the ticket as soon as it waited).
                    WakeReason asked = stage.takeClaimRequest();
                    if (reason == null && asked != null) {
                        reason = asked;
                    }
                    // A look the stage asked for after news came while its batch was out holds that news's rows, as a
                    // serial worker's second look does.
                    long lookAfter = stage.takeSecondLook();
                    if (lookAfter != NO_SECOND_LOOK) {
                        secondLookAfter = lookAfter;
                    }
                    if (stage.idle()) {
                        signal.takeTicket();
                    }
                }
                WakeSignal.News newsBefore = signal.newsSoFar();
                Cycle cycle = deliverOnceSurviving(reason, stage, newsBefore, continuing, secondLookAfter);
                continuing = cycle == Cycle.FULL || cycle == Cycle.HOLDING;
                if (signal.isShutdown()) {
                    break;
                }
                // Serial, a peer's claim that started after a row was named looks for it as this worker would: the
                // row is held for that claim instead of a second look beside it (see NamedWakes.unclaimedNewsAfter).
                // Not after a batch that holds rows back: this worker claims again anyway.
                boolean leavesToClaimsUnderWay = stage == null && settings.workers() > 1 && cycle == Cycle.PARTIAL;
                secondLookAfter = NO_SECOND_LOOK;
                boolean worthALook = (cycle == Cycle.PARTIAL || cycle == Cycle.HOLDING)
                        && newsWorthALook(newsBefore, leavesToClaimsUnderWay, false);
                if (leavesToClaimsUnderWay && !worthALook) {
                    letTheWatchEndHolds(); // rows left to a peer's claim
                }
                if (worthALook) {
                    // A wake-up came while this batch was out; the idle worker that took it may have found the
                    // new row held back by this very batch, so look again now that its outcome is written.
                    reason = signal.newsReason();
                    seen = signal.wakes();
                    if (stage == null) {
                        secondLookAfter = newsBefore.all();
                    }
                } else if (cycle == Cycle.HOLDING) {
                    // The store saw a row this batch held back: claimable now, and maybe nobody else will look (two
                    // claims at once can each leave it out, and its wake-up came before either started).
                    reason = WakeReason.HELD_BACK;
                    seen = signal.wakes();
                } else if (cycle == Cycle.FULL) {
                    reason = WakeReason.FULL_BATCH;
                    seen = signal.wakes();
                    if (settings.workers() > 1 && !heldElsewhere.holdsOffPeers(System.nanoTime(), currentIdleWait)
                            && (stage == null || !stage.latestRecordFailed())) {
                        // A backlog: an idle peer joins in, and its full batch brings the next one. Not while claims
                        // find every due row held elsewhere: the peer's claim would too. Nor, pipelined, while this
                        // worker's batches fail: a serial batch is full only once published, and a peer woken into an
                        // outage would cost a publish per pause of its own.
                        signal.wakeOne(WakeReason.FULL_BATCH);
                    }
                } else if (cycle == Cycle.FAILED && pausesThenClaims(first, System.nanoTime())) {
                    reason = WakeReason.INTERVAL;
                    seen = signal.wakes();
                } else if (cycle == Cycle.FAILED && signal.isShutdown()) {
                    break;
                } else {
                    WakeSignal.Woken woken = awaitIdle(first, seen, planner, stage);
                    // A ticket that only named news offered, whose rows claims of this engine have all taken since
                    // (a claim under way when the news came, or a busy worker's second look): its claim could only
                    // come back empty.
                    while (woken != null && woken.namedNewsOnly() && namedWakes.noNamedRowAwaitsAClaim()) {
                        woken = awaitIdle(first, woken.wakesSeen(), planner, stage);
                    }
                    if (woken == null) {
                        break;
                    }
                    reason = woken.reason();
                    seen = woken.wakesSeen();
                }
            }
        } finally {
            finished.countDown();
        }
    }

    /** No second look: a claim that holds no named row for itself (see NamedWakes.secondLookStarted). */
    private static final long NO_SECOND_LOOK = -1;

    /** While rows are held for a claim, the claim watch ends the holding if that claim has not returned by the limit. */
    private void letTheWatchEndHolds() {
        if (namedWakes.holding()) {
            watchSignal.wake(WakeReason.DEADLINE);
        }
    }

    /** Waits as an idle worker does for its next claim; null once shutdown ended the wait. */
    private WakeSignal.Woken awaitIdle(boolean first, long seen, WakeSignal.Planner planner, Stage stage) {
        if (first) {
            pollerWaiting = true;
        }
        WakeSignal.Woken woken = stage == null ? signal.await(seen, idleWait(), planner)
                : signal.await(seen, idleWait(), planner, stage::idle);
        return woken.reason() == WakeReason.SHUTDOWN ? null : woken;
    }

    /**
     * After a cycle that failed at {@code failedNanos}: pauses for the error pause, then answers whether this worker
     * claims again now. Worker 1 always does (it keeps the engine's clock). A peer does unless a claim started after
     * the failure (a failed claim's rows are free only once it failed: it may have locked them) or worker 1 is in its
     * own error pause (its claim after it starts later still): that claim takes what the failure left unclaimed, or
     * fails, and its own worker answers for it. Before, every worker whose cycle failed
     * claimed again after each of its pauses, so a peer the claim watch once stood in with for a late worker 1
     * claimed in step with worker 1 for the rest of an outage (DeliveryEngineWakeReview6Test). A peer that never
     * claimed again left the rows its claim was woken for, or its failed batch freed, to a poll the held-elsewhere
     * back-off may have stretched to 2 s (DeliveryEnginePeerFailureReviewTest), and a peer giving way to a worker that
     * claimed again did so too when that worker's claim then hung (DeliveryEngineReclaimPartReviewTest). False when
     * shutdown ended the pause.
     */
    private boolean pausesThenClaims(boolean first, long failedNanos) {
        failedAtNanos = System.nanoTime();
        if (first) {
            pollerPauseEndsNanos = failedAtNanos + errorPause.toNanos();
        }
        if (!signal.pause(errorPause)) {
            return false;
        }
        return first || latestClaimStartNanos - failedNanos <= 0 && System.nanoTime() - pollerPauseEndsNanos >= 0;
    }

    /**
     * Whether wake-ups since {@code before} may be about a row the batch just recorded held back, so that its
     * worker should look again: news that named no row, or a named row no claim of this engine has taken since. With
     * {@code leavesToClaimsUnderWay}, a named row that a claim started after its news is still looking for is held for
     * that claim instead ({@link NamedWakes#unclaimedNewsAfter}); with {@code askingALook} (a publish stage), a true
     * answer holds the named rows for the look its claimer is asked for, and rows another stage's look holds do not
     * count.
     */
    private boolean newsWorthALook(WakeSignal.News before, boolean leavesToClaimsUnderWay, boolean askingALook) {
        WakeSignal.News now = signal.newsSoFar();
        return now.all() != before.all() && (now.unnamed() != before.unnamed()
                || namedWakes.unclaimedNewsAfter(before.all(), leavesToClaimsUnderWay, askingALook));
    }

    /**
     * The reconciliation interval while a wake source reports UP; the fallback (poll) interval while every
     * source is failing, restarting or faulted, so that a capture fault slows delivery to polling and never
     * stops it. Sources wake the engine when they fail or restart, so a worker waiting the long interval
     * picks the short one at once.
     */
    private Duration idleWait() {
        Duration wait = settings.fallbackWakeInterval();
        if (wakeSources.isEmpty()) {
            wait = settings.wakeInterval();
        }
        for (WakeSource source : wakeSources) {
            try {
                if (source.health().status() == Health.Status.UP) {
                    wait = settings.wakeInterval();
                    break;
                }
            } catch (RuntimeException e) {
                listener.onError("wakeSource.health", e);
            }
        }
        currentIdleWait = wait;
        return wait;
    }

    private WakeSchedule.Wake planWake(Duration intervalLeft) {
        return WakeSchedule.next(intervalLeft, deadlines.untilNextRetry(), deadlines.untilNextLeaseExpiry(),
                Optional.empty(), false);
    }

    /**
     * The first worker polls an interval after the latest claim of any worker started, not an interval after
     * its own batch ended: a worker that claimed meanwhile took every row due then, and a row committed just
     * after that claim would otherwise wait the rest of the batch and a whole interval more.
     */
    private WakeSchedule.Wake planPollerWake(Duration intervalLeft) {
        return planWake(sinceLatestClaim());
    }

    /**
     * Workers other than the first plan no timer: they claim for wake-ups, full batches, and the tickets the
     * claim watch hands out while the first worker is busy, so an idle or busy engine makes one claim per
     * interval and one per retry falling due, whatever the number of workers (each peer planning the interval
     * or the deadlines itself made them all claim at the same moment).
     */
    private WakeSchedule.Wake planPeerWake(Duration intervalLeft) {
        return new WakeSchedule.Wake(PEER_IDLE_WAIT, WakeReason.INTERVAL);
    }

    /** Until an interval has passed since the latest claim started (negative once it has). */
    private Duration sinceLatestClaim() {
        return heldElsewhere.pollInterval(currentIdleWait).minusNanos(System.nanoTime() - latestClaimStartNanos);
    }

    /** A deadline was added: the first worker, and the claim watch that stands in for it, replan. */
    private void deadlinesChanged() {
        signal.scheduleChanged();
        if (settings.workers() > 1) {
            watchSignal.wake(WakeReason.DEADLINE);
        }
    }

    private void learnDeadlinesLeftByEarlierRuns() {
        try {
            Optional<Duration> next = store.timeUntilNextDue();
            if (next.isPresent() && next.get().compareTo(Duration.ZERO) > 0) {
                deadlines.retryDueAt(clock.instant().plus(next.get()));
                deadlinesChanged();
            }
        } catch (RuntimeException e) {
            listener.onError("timeUntilNextDue", e);
        }
    }

    /**
     * One cycle that cannot end the worker: the store and publisher calls inside handle runtime
     * exceptions, but an {@link Error} from an adapter would otherwise end the thread in silence.
     */
    private Cycle deliverOnceSurviving(WakeReason reason, Stage stage, WakeSignal.News newsBefore, boolean continuing,
                                       long secondLookAfter) {
        try {
            if (reason != null) {
                listener.onWake(reason);
            }
            Cycle cycle = deliverOnce(stage, newsBefore, continuing, secondLookAfter);
            recovered();
            return cycle;
        } catch (Throwable e) {
            failing("worker", e);
            return Cycle.FAILED;
        }
    }

    /**
     * The current thread's cycle ended with an Error: reported, and the thread counts as failing (health
     * DOWN) until a cycle of it completes. Store and publisher exceptions are not this: they are outages
     * that the database and broker health already show.
     */
    private void failing(String step, Throwable error) {
        failingThreads.put(Thread.currentThread().getName(), describe(error));
        listener.onError(step, error);
    }

    private void recovered() {
        failingThreads.remove(Thread.currentThread().getName());
    }

    private static String describe(Throwable error) {
        return error.getClass().getName() + (error.getMessage() == null ? "" : ": " + error.getMessage());
    }

    /**
     * Claims a batch; without a stage publishes and records it here (the serial loop), with one hands it to
     * the stage and returns at once.
     */
    private Cycle deliverOnce(Stage stage, WakeSignal.News newsBefore, boolean continuing, long secondLookAfter) {
        long started = System.nanoTime();
        latestClaimStartNanos = started;
        Instant claimStart = clock.instant();
        deadlines.reachedAt(claimStart);
        ClaimBatch batch = null;
        long claimNumber;
        if (secondLookAfter == NO_SECOND_LOOK) {
            claimNumber = namedWakes.claimStarted();
        } else {
            claimNumber = namedWakes.secondLookStarted(secondLookAfter);
            letTheWatchEndHolds();
        }
        try {
            batch = store.claim(claimRequest);
        } catch (RuntimeException e) {
            listener.onError("claim", e);
            return Cycle.FAILED;
        } finally {
            WakeReason held = namedWakes.claimEnded(claimNumber, batch == null ? List.of() : batch.deliveries());
            if (held != null) {
                wake(held);
            }
        }
        Instant claimEnd = clock.instant();
        listener.onClaimed(batch.size(), Duration.between(claimStart, claimEnd));
        if (batch.isEmpty()) {
            if (batch.heldElsewhere()) {
                heldElsewhere.heldElsewhere(System.nanoTime());
            } else {
                heldElsewhere.reset();
            }
            return Cycle.EMPTY;
        }
        if (!continuing) {
            heldElsewhere.reset();
        }
        InFlightBatch flight = new InFlightBatch(batch, claimStart, settings.leaseLength(),
                settings.leaseRenewalInterval());
        if (signal.isShutdown()) {
            // The claim returned after shutdown began: hand the rows straight back.
            release(batch.lease(), flight.eventIds());
            return Cycle.FAILED;
        }
        boolean full = batch.size() >= settings.batchSize();
        if (stage != null) {
            // A batch waiting for the stage is not renewed: if the stage is stuck, its lease lapses and other
            // claimers may take its rows; the stage checks the lease before it starts the publish.
            if (!stage.hand(new Handed(batch, flight, newsBefore))) {
                // Shutdown closed the stage between the check above and now: nothing of it was sent.
                release(batch.lease(), flight.eventIds());
                return Cycle.FAILED;
            }
            return full ? Cycle.FULL : Cycle.HANDED;
        }
        if (lapsesBeforeRenewal(flight, claimEnd) && !renewedBeforePublishing(batch, flight, "the claim was answered after "
                + Duration.between(claimStart, claimEnd).toMillis() + " ms, too close to its lease of "
                + settings.leaseLength().toMillis() + " ms")) {
            // The claim came back so late that its lease may have lapsed (a pause, a stalled network, a slow
            // database), and renewing it found rows another claimer owns, or failed, or shutdown began meanwhile:
            // handed back, not published; a failed cycle, so the worker pauses before it claims again.
            release(batch.lease(), flight.eventIds());
            return Cycle.FAILED;
        }
        startFlight(flight);
        return publishAndRecord(batch, flight, claimEnd);
    }

    /**
     * Renews a batch whose claim answered too late for the renewer's first turn, before anything of it is published:
     * its lease ran from the claim's start by this relay's clock, but the store set it later, and a renewal, fenced
     * by the lease, says whether every row is still this batch's. A relay whose claims steadily take most of the
     * lease then still delivers (DeliveryEngineLateClaimTest).
     */
    private boolean renewedBeforePublishing(ClaimBatch batch, InFlightBatch flight, String late) {
        Instant at = clock.instant();
        try {
            int owned = store.renew(batch.lease(), settings.leaseLength());
            if (owned >= batch.size()) {
                flight.renewed(at, settings.leaseLength(), settings.leaseRenewalInterval(), owned);
                Instant answered = clock.instant();
                if (signal.isShutdown()) {
                    // stop() may have given up on this worker while it renewed: nothing starts after it returned.
                    return false;
                }
                if (!lapsesBeforeRenewal(flight, answered)) {
                    return true;
                }
                // The renewal's answer came late too: the lease it set may have run out since.
                listener.onError("claim", new IllegalStateException(late + ", and renewing its lease took "
                        + Duration.between(at, answered).toMillis() + " ms: its " + batch.size()
                        + " rows are handed back unpublished"));
                return false;
            }
            listener.onError("claim", new IllegalStateException(late + ", and another claimer took " + (batch.size() - owned)
                    + " of its " + batch.size() + " rows meanwhile: they are handed back unpublished"));
        } catch (RuntimeException e) {
            listener.onError("claim", new IllegalStateException(late + ", and renewing its lease failed: its "
                    + batch.size() + " rows are handed back unpublished", e));
        }
        return false;
    }

    private boolean lapsesBeforeRenewal(InFlightBatch flight, Instant now) {
        return now.plus(settings.leaseRenewalInterval()).isAfter(flight.leaseExpiry());
    }

    /** The batch's publish starts: the renewer keeps its lease alive from now until the publish returns. */
    private void startFlight(InFlightBatch flight) {
        inFlight.put(flight.lease(), flight);
        renewerSignal.wake(WakeReason.DEADLINE);
    }

    /**
     * Publishes a claimed batch and records its outcome: FAILED, or FULL / PARTIAL by the batch's size. Runs
     * on the worker (depth 1) or on its publish stage; the batch stays in {@code inFlight}, its lease renewed,
     * until the publish returns.
     */
    private Cycle publishAndRecord(ClaimBatch batch, InFlightBatch flight, Instant publishStart) {
        return recordPublished(batch, flight, publish(batch, publishStart));
    }

    /** What a publish answered, and the outcome plan made of it. */
    private record Published(List<PublishOutcome> outcomes, boolean threw, OutcomePlan plan) {

        /** Every row acked: the record is a markSent and nothing in it can ask for a pause but its own failure. */
        boolean clean() {
            return !threw && plan.reschedules().isEmpty() && plan.parks().isEmpty() && plan.released().isEmpty();
        }
    }

    /** Publishes a claimed batch and plans its outcome; the batch is in the renewer's care until the publish returns. */
    private Published publish(ClaimBatch batch, Instant publishStart) {
        boolean failed = false;
        List<PublishOutcome> outcomes;
        try {
            outcomes = publisher.publish(batch.deliveries());
        } catch (RuntimeException | Error e) {
            // An Error from an adapter (a class missing from its jar) is a failed publish like any other,
            // not a reason to leave the batch leased until its lease runs out.
            listener.onError("publish", e);
            failed = true;
            String reason = "publisher threw " + e.getClass().getSimpleName()
                    + (e.getMessage() == null ? "" : ": " + e.getMessage());
            outcomes = batch.deliveries().stream()
                    .map(d -> PublishOutcome.retriable(d.eventId(), reason)).toList();
        } finally {
            inFlight.remove(batch.lease());
            // An adapter that was interrupted while it waited puts the flag back; the engine never stops its threads
            // that way (stop() does), and a flag left set would end every wait of this thread from now on.
            Thread.interrupted();
        }
        if (!failed) {
            listener.onPublished(outcomes == null ? List.of() : outcomes.stream().filter(Objects::nonNull).toList(),
                    Duration.between(publishStart, clock.instant()));
        }
        OutcomePlan plan = OutcomePlan.plan(batch.deliveries(), outcomes, settings.ordering(),
                settings.retryPolicy(), random);
        return new Published(outcomes, failed, plan);
    }

    /** Records a published batch's outcome: FAILED, or FULL / PARTIAL / HOLDING by the batch's size. */
    private Cycle recordPublished(ClaimBatch batch, InFlightBatch flight, Published published) {
        boolean failed = published.threw();
        failed |= !record(batch, published.plan(), flight);
        failed |= looksLikeAnOutage(published.outcomes());
        if (failed) {
            return Cycle.FAILED;
        }
        if (batch.size() >= settings.batchSize()) {
            return Cycle.FULL;
        }
        return batch.holdsBack() ? Cycle.HOLDING : Cycle.PARTIAL;
    }

    /**
     * Nothing acked and something never sent: the broker is likely down. Those rows are due again at once,
     * so the worker pauses instead of claiming them in a busy loop.
     */
    private static boolean looksLikeAnOutage(List<PublishOutcome> outcomes) {
        if (outcomes == null) {
            return false;
        }
        boolean notAttempted = false;
        for (PublishOutcome outcome : outcomes) {
            if (outcome instanceof PublishOutcome.Acked) {
                return false;
            }
            notAttempted |= outcome instanceof PublishOutcome.NotAttempted;
        }
        return notAttempted;
    }

    /** Writes the plan; false when a write failed. */
    private boolean record(ClaimBatch batch, OutcomePlan plan, InFlightBatch flight) {
        LeaseToken lease = batch.lease();
        Map<UUID, ClaimedDelivery> byId = new HashMap<>();
        for (ClaimedDelivery delivery : batch.deliveries()) {
            byId.put(delivery.eventId(), delivery);
        }
        int expected = 0;
        int updated = 0;
        boolean ok = true;
        if (!plan.sent().isEmpty()) {
            try {
                updated += store.markSent(lease, plan.sent());
                expected += plan.sent().size();
                listener.onDelivered(plan.sent().stream().map(byId::get).toList());
            } catch (RuntimeException e) {
                listener.onError("markSent", e);
                ok = false;
            }
        }
        if (!plan.reschedules().isEmpty()) {
            try {
                updated += store.reschedule(lease, plan.reschedules());
                expected += plan.reschedules().size();
                Instant now = clock.instant();
                for (Reschedule retry : plan.reschedules()) {
                    deadlines.retryDueAt(now.plus(retry.delay()));
                    listener.onRetryScheduled(byId.get(retry.eventId()), retry.delay(), retry.reason());
                }
                deadlinesChanged();
            } catch (RuntimeException e) {
                listener.onError("reschedule", e);
                ok = false;
            }
        }
        if (!plan.parks().isEmpty()) {
            try {
                updated += store.park(lease, plan.parks());
                expected += plan.parks().size();
                for (Park park : plan.parks()) {
                    listener.onParked(byId.get(park.eventId()), park.reason());
                }
            } catch (RuntimeException e) {
                listener.onError("park", e);
                ok = false;
            }
        }
        if (!plan.released().isEmpty()) {
            WakeReason skipped = namedWakes.released(plan.released());
            try {
                updated += store.release(lease, plan.released());
                expected += plan.released().size();
            } catch (RuntimeException e) {
                listener.onError("release", e);
                ok = false;
            }
            if (skipped != null) {
                // Due again, and the wake-up that named one was skipped while it was claimed: look again now.
                wake(skipped);
            }
        }
        int newlyLost = updated < expected ? flight.lostOnOutcome(expected - updated) : 0;
        if (newlyLost > 0) {
            listener.onLeaseLost(lease, updated + newlyLost, updated);
        }
        if (!ok) {
            // Rows whose write failed stay leased until the lease runs out; look again then.
            deadlines.leaseExpiresAt(flight.leaseExpiry());
            deadlinesChanged();
        }
        return ok;
    }

    private void release(LeaseToken lease, List<UUID> eventIds) {
        WakeReason skipped = namedWakes.released(eventIds);
        try {
            int released = store.release(lease, eventIds);
            if (released < eventIds.size()) {
                listener.onLeaseLost(lease, eventIds.size(), released);
            }
        } catch (RuntimeException e) {
            listener.onError("release", e);
        }
        if (skipped != null) {
            wake(skipped);
        }
    }

    // ---------------------------------------------------------------- publish stages

    /** A claimed batch on its way to the stage, with the news count its claim started from. */
    private record Handed(ClaimBatch batch, InFlightBatch flight, WakeSignal.News newsBefore) {
    }

    /** A batch whose publish was clean, on its way to the record stage; its publish started at the given nanos. */
    private record Recording(Handed handed, Published published, long publishStartedNanos) {
    }

    /**
     * The publish stage of one worker (pipeline depth 2 or more): publishes that worker's batches one at a
     * time, in the order claimed, and records their outcomes; a batch whose publish was clean it hands to the
     * worker's record stage and publishes the next meanwhile. The worker thread only claims. The stages ask
     * their worker for a claim or a pause through two flags the worker reads before its next claim (and its
     * idle planner reads while it waits), so the worker's rules stay in one place.
     */
    private static final class Stage {
        private final int depth;
        private final ReentrantLock lock = new ReentrantLock();
        private final Condition changed = lock.newCondition();
        private final ArrayDeque<Handed> queue = new ArrayDeque<>();
        private boolean publishing;
        private boolean closed;
        /** The batch the record stage writes the outcome of, or null; it holds a slot until written. */
        private Recording recording;
        private boolean publishingEnded;
        private boolean recorderEnded;
        private volatile boolean idle = true;
        /** When the stage's latest failed batch asked for a pause not yet taken, or NO_PAUSE. */
        private volatile long pauseRequestedAtNanos = NO_PAUSE;
        /** When the latest failed batch failed, or NO_PAUSE once a batch published after it did not fail. */
        private final AtomicLong latestFailureNanos = new AtomicLong(NO_PAUSE);
        private volatile WakeReason claimRequested;
        private final AtomicLong secondLookAfter = new AtomicLong(NO_SECOND_LOOK);

        Stage(int depth) {
            this.depth = depth;
        }

        /** Changes the stage's state under its lock and wakes every thread waiting for a change. */
        private void changeAndSignal(Runnable change) {
            lock.lock();
            try {
                change.run();
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        }

        /** Batches claimed and not yet recorded: queued, the one publishing and the one being recorded. */
        private int outstanding() {
            return queue.size() + (publishing ? 1 : 0) + (recording != null ? 1 : 0);
        }

        /** Waits until the worker may claim one more batch; false once the stage is closed. */
        boolean awaitSlot() {
            lock.lock();
            try {
                while (!closed && outstanding() >= depth) {
                    changed.await();
                }
                return !closed;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            } finally {
                lock.unlock();
            }
        }

        /** Queues a claimed batch; false when the stage is closed (shutdown), then the caller releases it. */
        boolean hand(Handed handed) {
            lock.lock();
            try {
                if (closed) {
                    return false;
                }
                queue.addLast(handed);
                idle = false;
                changed.signalAll();
                return true;
            } finally {
                lock.unlock();
            }
        }

        /** The next batch to publish, marked as publishing; null once closed and drained. */
        Handed next() {
            lock.lock();
            try {
                while (queue.isEmpty() && !closed) {
                    changed.await();
                }
                Handed next = queue.pollFirst();
                publishing = next != null;
                return next;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            } finally {
                lock.unlock();
            }
        }

        /** The batch from {@link #next} is recorded, handed to the record stage, or given up. */
        void done() {
            changeAndSignal(() -> {
                publishing = false;
                idle = queue.isEmpty() && recording == null;
            });
        }

        /**
         * Hands the publishing batch to the record stage once that has written the one before (so a worker holds at
         * most one batch published and unrecorded there); false if the record stage ended, then the caller records.
         */
        boolean handToRecorder(Recording next) {
            lock.lock();
            try {
                while (recording != null && !recorderEnded) {
                    changed.await();
                }
                if (recorderEnded) {
                    return false;
                }
                recording = next;
                publishing = false;
                changed.signalAll();
                return true;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            } finally {
                lock.unlock();
            }
        }

        /** The batch to record; null once the publish stage ended and everything it handed over is recorded. */
        Recording nextRecording() {
            lock.lock();
            try {
                while (recording == null && !publishingEnded) {
                    changed.await();
                }
                return recording;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            } finally {
                lock.unlock();
            }
        }

        /** The batch from {@link #nextRecording} is recorded (or given up): its slot is free. */
        void recordDone() {
            changeAndSignal(() -> {
                recording = null;
                idle = queue.isEmpty() && !publishing;
            });
        }

        /** The publish stage ended (shutdown): the record stage ends once it wrote what it was handed. */
        void publishingEnded() {
            changeAndSignal(() -> {
                publishingEnded = true;
            });
        }

        /** The record stage ended: the publish stage records its batches itself from now on. */
        void recorderEnded() {
            changeAndSignal(() -> {
                recorderEnded = true;
            });
        }

        /** No more batches: the worker stops claiming; the stage publishes what is queued, then ends. */
        void close() {
            changeAndSignal(() -> {
                closed = true;
            });
        }

        /** Takes the queued batches whose publish has not started (after the shutdown deadline). */
        List<Handed> drainUnstarted() {
            lock.lock();
            try {
                List<Handed> unstarted = new ArrayList<>(queue);
                queue.clear();
                idle = !publishing && recording == null;
                changed.signalAll();
                return unstarted;
            } finally {
                lock.unlock();
            }
        }

        /**
         * Nothing of this worker's is claimed and unrecorded. Until then the worker is busy as a serial worker
         * is while it publishes: it takes no wake-up tickets (they go to idle peers, or wait for this stage to
         * finish: its recorded batch then asks for a claim if news came meanwhile), so wake-ups while a batch is
         * out coalesce into one more claim at any depth.
         */
        boolean idle() {
            return idle;
        }

        void requestPause(long failedNanos) {
            latestFailureNanos.accumulateAndGet(failedNanos, (latest, failed) -> latest == NO_PAUSE ? failed
                    : failed - latest > 0 ? failed : latest);
            pauseRequestedAtNanos = failedNanos;
        }

        /**
         * A batch whose publish started at {@code publishStartedNanos} was recorded without failing. A failure
         * before that start is over: that publish waited out its pause (see awaitTheStagePause). A later one, of a
         * batch published while this one was being recorded, still stands: its pause must not end early.
         */
        void recorded(long publishStartedNanos) {
            latestFailureNanos.updateAndGet(failed -> failed != NO_PAUSE && failed - publishStartedNanos < 0 ? NO_PAUSE
                    : failed);
        }

        /** Whether the latest batch the stage recorded failed (or looked like an outage). */
        boolean latestRecordFailed() {
            return latestFailureNanos.get() != NO_PAUSE;
        }

        /**
         * When the latest batch the stage recorded failed, or {@link #NO_PAUSE} if it did not; unlike the request,
         * not taken by the worker.
         */
        long latestFailureNanos() {
            return latestFailureNanos.get();
        }

        void requestClaim(WakeReason reason) {
            claimRequested = reason;
        }

        /**
         * Asks for a look after news later than {@code news} came while a batch was out: the claim holds that news's
         * named rows for itself ({@link NamedWakes#secondLookStarted}). Several requests before the claim ask for one
         * look after the earliest news.
         */
        void requestSecondLook(WakeReason reason, long news) {
            secondLookAfter.accumulateAndGet(news, (asked, next) -> asked == NO_SECOND_LOOK ? next : Math.min(asked, next));
            claimRequested = reason;
        }

        /** Takes the news the requested second look is after, or {@link #NO_SECOND_LOOK}. */
        long takeSecondLook() {
            return secondLookAfter.getAndSet(NO_SECOND_LOOK);
        }

        /** What {@link #takePause} answers when no pause was asked for. */
        static final long NO_PAUSE = Long.MIN_VALUE;

        /** Takes the pause the stage asked for: when its failed batch asked, or {@link #NO_PAUSE}. */
        long takePause() {
            long requested = pauseRequestedAtNanos;
            pauseRequestedAtNanos = NO_PAUSE;
            return requested;
        }

        WakeReason takeClaimRequest() {
            WakeReason reason = claimRequested;
            claimRequested = null;
            return reason;
        }

        boolean wantsClaim() {
            return pauseRequestedAtNanos != NO_PAUSE || claimRequested != null;
        }

        WakeReason wantedReason() {
            WakeReason reason = claimRequested;
            return pauseRequestedAtNanos != NO_PAUSE || reason == null ? WakeReason.INTERVAL : reason;
        }
    }

    private void runStage(Stage stage) {
        try {
            Handed handed;
            while ((handed = stage.next()) != null) {
                try {
                    publishAndRecordSurviving(stage, handed);
                } finally {
                    stage.done();
                }
                // Only now, with the slot free and the worker idle if nothing else is queued: the worker replans,
                // sees a request, or takes a ticket it declined while busy (one claim for both).
                signal.scheduleChanged();

            }
        } finally {
            stage.publishingEnded();
            finished.countDown();
        }
    }

    /**
     * The record stage of one worker: writes the outcomes of the batches its publish stage published cleanly, one at
     * a time, while that stage publishes the next, so the broker does not wait for the database. Order per aggregate
     * needs no wait here: the worker claimed every batch after this one while this one still held its rows.
     */
    private void runRecordStage(Stage stage) {
        try {
            Recording recording;
            while ((recording = stage.nextRecording()) != null) {
                try {
                    recordSurviving(stage, recording);
                } finally {
                    stage.recordDone();
                }
                signal.scheduleChanged();
            }
        } finally {
            stage.recorderEnded();
            finished.countDown();
        }
    }

    private void recordSurviving(Stage stage, Recording recording) {
        Handed handed = recording.handed();
        try {
            Cycle cycle;
            try {
                cycle = recordPublished(handed.batch(), handed.flight(), recording.published());
                recovered();
            } catch (Throwable e) {
                // An Error from an adapter while recording: the rows not written stay leased until the lease runs
                // out; look again then.
                failing("record-stage", e);
                deadlines.leaseExpiresAt(handed.flight().leaseExpiry());
                deadlinesChanged();
                cycle = Cycle.FAILED;
            }
            afterRecord(stage, handed, cycle, recording.publishStartedNanos());
        } catch (Throwable e) {
            failing("record-stage", e);
        }
    }

    /**
     * The stage's half of the worker's rules: a failed batch makes the worker pause before its next claim;
     * a full batch, or one during whose flight a wake-up about new rows came, makes it claim again once the
     * outcome is written (the worker's own claim since may have started before it and found rows this batch
     * held back). Requests are flags, so many of them before the worker's next claim ask for one claim.
     */
    private void publishAndRecordSurviving(Stage stage, Handed handed) {
        Cycle cycle;
        long publishStartedNanos = System.nanoTime();
        try {
            Instant now;
            boolean waitedOut;
            do {
                waitedOut = awaitTheStagePause(stage);
                now = clock.instant();
                if (lapsesBeforeRenewal(handed.flight(), now) && !renewedBeforePublishing(handed.batch(), handed.flight(),
                        "the batch waited " + Duration.between(handed.flight().leaseExpiry().minus(settings.leaseLength()), now)
                                .toMillis() + " ms since its claim began, too close to its lease of "
                                + settings.leaseLength().toMillis() + " ms")) {
                    // The batch waited so long that its lease may have lapsed, or would before the renewer's next
                    // turn, and renewing it (fenced by the lease) found rows another claimer owns, failed, or came
                    // back late: not published but handed back (the release is fenced too), and claimed again.
                    release(handed.batch().lease(), handed.flight().eventIds());
                    stage.requestClaim(WakeReason.DEADLINE);
                    recovered();
                    return;
                }
                // A failure on the record stage during the lease check: wait it out too, then check the lease again.
            } while (waitedOut && stagePauseLeftNanos(stage) > 0);
            publishStartedNanos = System.nanoTime();
            startFlight(handed.flight());
            Published published = publish(handed.batch(), now);
            if (published.clean() && stage.handToRecorder(new Recording(handed, published, publishStartedNanos))) {
                recovered();
                return;
            }
            cycle = recordPublished(handed.batch(), handed.flight(), published);
            recovered();
        } catch (Throwable e) {
            // An Error from an adapter while recording: the rows not written stay leased until the lease runs
            // out; look again then. The stage carries on with the next batch.
            inFlight.remove(handed.batch().lease());
            failing("publish-stage", e);
            deadlines.leaseExpiresAt(handed.flight().leaseExpiry());
            deadlinesChanged();
            cycle = Cycle.FAILED;
        }
        afterRecord(stage, handed, cycle, publishStartedNanos);
    }

    /** What the worker does next after a batch of its stages was recorded (see publishAndRecordSurviving). */
    private void afterRecord(Stage stage, Handed handed, Cycle cycle, long publishStartedNanos) {
        if (cycle == Cycle.FAILED) {
            failedAtNanos = System.nanoTime();
            stage.requestPause(failedAtNanos);
            return;
        }
        stage.recorded(publishStartedNanos);
        // As in the serial loop: after a partial batch, a named row that a claim started after its news is still
        // looking for is held for that claim instead of a look beside it.
        boolean leavesToClaimsUnderWay = settings.workers() > 1 && cycle == Cycle.PARTIAL;
        boolean worthALook = newsWorthALook(handed.newsBefore(), leavesToClaimsUnderWay, true);
        if (worthALook || leavesToClaimsUnderWay) {
            letTheWatchEndHolds(); // rows held for the look asked for, or left to a claim under way
        }
        if (worthALook) {
            stage.requestSecondLook(signal.newsReason(), handed.newsBefore().all());
        } else if (cycle == Cycle.HOLDING) {
            stage.requestClaim(WakeReason.HELD_BACK);
        } else if (cycle == Cycle.FULL) {
            stage.requestClaim(WakeReason.FULL_BATCH);
        }
    }

    /**
     * Waits out the error pause after the stage's latest failed batch: a batch queued behind it, or claimed while it
     * was out, waits as it would have waited to be claimed in the serial loop, so an outage costs one publish per
     * pause. Batches the worker claimed after its own pause find it over. Shutdown ends the wait: false then.
     */
    private boolean awaitTheStagePause(Stage stage) {
        long left;
        // Looks again after each wait: the record stage may fail while the publish stage waits out an earlier pause.
        while ((left = stagePauseLeftNanos(stage)) > 0) {
            if (!signal.pause(Duration.ofNanos(left))) {
                return false; // shutdown (or an interrupt) ended the wait
            }
        }
        return true;
    }

    /** How much of the pause after the stage's latest failure is left; 0 or less when none is. */
    private long stagePauseLeftNanos(Stage stage) {
        long failed = stage.latestFailureNanos();
        return failed == Stage.NO_PAUSE ? 0 : failed + errorPause.toNanos() - System.nanoTime();
    }

    // ---------------------------------------------------------------- lease renewal

    private void runRenewer() {
        Duration interval = settings.leaseRenewalInterval();
        while (!renewerSignal.isShutdown()) {
            long seen = renewerSignal.wakes();
            Instant next;
            try {
                next = renewDue(interval);
                recovered();
            } catch (Throwable e) {
                // An Error must not end the renewer: every lease in flight would then run out.
                failing("renewer", e);
                next = clock.instant().plus(interval.dividedBy(4));
            }
            Duration wait = Duration.between(clock.instant(), next);
            renewerSignal.await(seen, wait.isNegative() ? Duration.ZERO : wait,
                    left -> WakeSchedule.next(left, Optional.empty(), Optional.empty(), Optional.empty(), false));
        }
    }

    // ---------------------------------------------------------------- the claim watch

    /**
     * With more than one worker, a thread that never touches the store stands in for the first worker while that
     * worker is not waiting for its interval and deadlines (it is claiming, publishing, writing outcomes or
     * pausing, or its claim or outcome write hangs on a database that stopped answering on that connection):
     * when the interval poll or a deadline is overdue, it hands one ticket to an idle worker, which claims in the
     * first worker's place, so rows are taken on time and the engine still makes one claim per interval. It also
     * turns rows held past the hold limit for a claim under way into one wake-up.
     */
    private void runClaimWatch() {
        while (!watchSignal.isShutdown()) {
            long seen = watchSignal.wakes();
            Duration wait;
            try {
                wait = watchClaims();
            } catch (Throwable e) {
                failing("claim-watch", e);
                wait = currentIdleWait;
            }
            watchSignal.await(seen, wait,
                    left -> WakeSchedule.next(left, Optional.empty(), Optional.empty(), Optional.empty(), false));
        }
    }

    /** How late the first worker may be before the claim watch stands in (it wakes and claims in microseconds). */
    private static final long WATCH_GRACE_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

    /** One look of the claim watch; answers when to look again. */
    private Duration watchClaims() {
        WakeReason held = namedWakes.expireHeld();
        if (held != null) {
            wake(held);
        }
        Duration interval = heldElsewhere.pollInterval(currentIdleWait);
        long intervalNanos = interval.toNanos();
        long now = System.nanoTime();
        long untilPoll = latestClaimStartNanos + intervalNanos - now;
        long untilDeadline = deadlines.earliest().map(at -> Duration.between(clock.instant(), at).toNanos())
                .orElse(Long.MAX_VALUE / 2);
        WakeReason due = untilDeadline <= -WATCH_GRACE_NANOS ? WakeReason.DEADLINE
                : untilPoll <= -WATCH_GRACE_NANOS ? WakeReason.INTERVAL : null;
        // A ticket counts as out until a claim starts after it, or an interval passes (every worker was busy).
        boolean ticketOut = watchTicketNanos - latestClaimStartNanos > 0 && now - watchTicketNanos < intervalNanos;
        // After a failed cycle the engine backs off for the error pause: an outage costs one claim per pause, not
        // one per worker (a retry due meanwhile waits for the pause, at most a second).
        long backOffLeft = failedAtNanos + errorPause.toNanos() - now;
        if (due != null && !pollerWaiting && !ticketOut && backOffLeft <= 0) {
            watchTicketNanos = now;
            signal.handOne(due);
            ticketOut = true;
        }
        long look = ticketOut ? watchTicketNanos + intervalNanos - now
                : due != null && backOffLeft > 0 ? backOffLeft + WATCH_GRACE_NANOS
                : Math.min(Math.max(untilPoll, 0), Math.max(untilDeadline, 0)) + WATCH_GRACE_NANOS;
        long holdLeft = namedWakes.untilHeldExpire().map(Duration::toNanos).orElse(Long.MAX_VALUE);
        return Duration.ofNanos(Math.max(0, Math.min(Math.min(look, holdLeft), intervalNanos)));
    }

    /** Renews the leases that are due; answers when the next one falls due. */
    private Instant renewDue(Duration interval) {
        Instant now = clock.instant();
        Instant next = now.plus(interval);
        for (InFlightBatch batch : inFlight.values()) {
            if (batch.owned() == 0) {
                continue;
            }
            if (!batch.nextRenewal().isAfter(now)) {
                renew(batch, now);
            }
            if (batch.nextRenewal().isBefore(next)) {
                next = batch.nextRenewal();
            }
        }
        return next;
    }

    private void renew(InFlightBatch batch, Instant now) {
        try {
            int owned = store.renew(batch.lease(), settings.leaseLength());
            int newlyLost = batch.lostOnRenewal(owned);
            if (newlyLost > 0) {
                listener.onLeaseLost(batch.lease(), owned + newlyLost, owned);
            }
            batch.renewed(now, settings.leaseLength(), settings.leaseRenewalInterval(), owned);
        } catch (RuntimeException e) {
            listener.onError("renew", e);
            // Try again soon rather than a full interval later: the lease is still running out.
            batch.renewed(now, settings.leaseLength(), settings.leaseRenewalInterval().dividedBy(4),
                    batch.owned());
        }
    }

    // ---------------------------------------------------------------- housekeeping

    private void runHousekeeping() {
        try {
            while (signal.pause(settings.purgeInterval())) {
                purge();
            }
        } finally {
            finished.countDown();
        }
    }

    private void purge() {
        try {
            int purged;
            do {
                purged = store.purgeSent(settings.purgeRetention(), settings.purgeBatchSize());
            } while (purged >= settings.purgeBatchSize() && !signal.isShutdown());
            recovered();
        } catch (RuntimeException e) {
            listener.onError("purge", e);
        } catch (Throwable e) {
            failing("housekeeping", e);
        }
    }

    // ---------------------------------------------------------------- randomness

    /** The default: each thread draws from its own generator. */
    private static final class ThreadLocalRandomGenerator implements RandomGenerator {
        @Override
        public long nextLong() {
            return ThreadLocalRandom.current().nextLong();
        }
    }

    /** Workers share a caller-supplied generator that need not be thread-safe. */
    private static final class SynchronizedRandom implements RandomGenerator {
        private final RandomGenerator delegate;

        SynchronizedRandom(RandomGenerator delegate) {
            this.delegate = delegate;
        }

        @Override
        public synchronized long nextLong() {
            return delegate.nextLong();
        }

        @Override
        public synchronized double nextDouble() {
            return delegate.nextDouble();
        }
    }

    // ---------------------------------------------------------------- builder

    /**
     * Builds a {@link DeliveryEngine}. {@code store} and {@code publisher} are required; the rest have
     * defaults: settings {@link DeliverySettings#defaults()}, clock {@link Clock#systemUTC()}, listener
     * {@link DeliveryListener#NOOP}, no wake sources, and a thread-local random source for jitter.
     * Setters reject {@code null} with an {@link IllegalArgumentException} naming the property.
     */
    public static final class Builder {
        private OutboxStore store;
        private MessagePublisher publisher;
        private DeliverySettings settings = DeliverySettings.defaults();
        private Clock clock = Clock.systemUTC();
        private DeliveryListener listener = DeliveryListener.NOOP;
        private final List<WakeSource> wakeSources = new ArrayList<>();
        private RandomGenerator random;
        private Duration namedWakeHoldLimit = NamedWakes.HOLD_LIMIT;

        private Builder() {
        }

        /** For tests that hold a claim open longer than {@link NamedWakes#HOLD_LIMIT} on purpose. */
        Builder namedWakeHoldLimit(Duration limit) {
            this.namedWakeHoldLimit = present(limit, "namedWakeHoldLimit");
            return this;
        }

        /** Where rows are claimed and outcomes recorded. Required. */
        public Builder store(OutboxStore store) {
            this.store = present(store, "store");
            return this;
        }

        /** Where messages go. Required. */
        public Builder publisher(MessagePublisher publisher) {
            this.publisher = present(publisher, "publisher");
            return this;
        }

        /** Default {@link DeliverySettings#defaults()}. */
        public Builder settings(DeliverySettings settings) {
            this.settings = present(settings, "settings");
            return this;
        }

        /** The source of instants; must advance with real time. Default {@link Clock#systemUTC()}. */
        public Builder clock(Clock clock) {
            this.clock = present(clock, "clock");
            return this;
        }

        /** Receives what happened. Default {@link DeliveryListener#NOOP}. */
        public Builder listener(DeliveryListener listener) {
            this.listener = present(listener, "listener");
            return this;
        }

        /** Adds a source of wake-ups; started with the engine and closed when it stops. Zero or more. */
        public Builder wakeSource(WakeSource wakeSource) {
            wakeSources.add(present(wakeSource, "wakeSource"));
            return this;
        }

        /** The source of retry jitter (access is serialised by the engine). Default: thread-local random. */
        public Builder random(RandomGenerator random) {
            this.random = present(random, "random");
            return this;
        }

        /**
         * The engine, not yet started.
         *
         * @throws IllegalStateException when store or publisher is missing
         */
        public DeliveryEngine build() {
            if (store == null) {
                throw new IllegalStateException("store is required");
            }
            if (publisher == null) {
                throw new IllegalStateException("publisher is required");
            }
            return new DeliveryEngine(this);
        }

        private static <T> T present(T value, String property) {
            if (value == null) {
                throw new IllegalArgumentException(property + " must not be null");
            }
            return value;
        }
    }
}
