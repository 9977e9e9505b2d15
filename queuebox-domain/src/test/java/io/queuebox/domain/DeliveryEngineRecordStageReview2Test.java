package io.queuebox.domain;

import static io.queuebox.domain.Fixtures.anEventFor;
import static io.queuebox.domain.Fixtures.order;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.ports.WakeReason;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Second adversarial review, of 6fab267 (awaitTheStagePause looks again after each wait; the publish stage repeats
 * its pause wait and lease check while a pause is left; the claimer looks for a newer pause request after its pause).
 * Tests under "findings" fail on 6fab267 for the reason their names give; tests under "held" are attacks the fix
 * withstood, left passing.
 */
class DeliveryEngineRecordStageReview2Test {

    private static final Duration SOON = EngineHarness.SOON;
    private static final Duration LONG_INTERVAL = EngineHarness.LONG_INTERVAL;
    /** The error pause of an engine whose wake interval is LONG_INTERVAL. */
    private static final Duration ERROR_PAUSE = Duration.ofSeconds(1);

    private final FakeOutboxStore fake = new FakeOutboxStore(Clock.systemUTC());
    private final HookedOutboxStore store = new HookedOutboxStore(fake);
    private final FakePublisher publisher = new FakePublisher();
    private final RecordingListener listener = new RecordingListener();
    private final EngineHarness engines = new EngineHarness();
    private final List<CountDownLatch> gates = new CopyOnWriteArrayList<>();
    private final List<Stamp> publishes = new CopyOnWriteArrayList<>();

    private record Stamp(UUID id, long nanos) {
    }

    @AfterEach
    void stopEngines() {
        gates.forEach(CountDownLatch::countDown);
        engines.stopAll(publisher);
    }

    private CountDownLatch gate() {
        CountDownLatch latch = new CountDownLatch(1);
        gates.add(latch);
        return latch;
    }

    private DeliveryEngine started(DeliverySettings.Builder settings) {
        return engines.start(DeliveryEngine.builder(), store, publisher, listener, settings);
    }

    private UUID oneEventOf(String aggregate) {
        OutboxEvent event = anEventFor(order(aggregate));
        fake.add(event);
        return event.eventId();
    }

    private void answering(java.util.function.Consumer<UUID> before) {
        publisher.answer = d -> {
            publishes.add(new Stamp(d.eventId(), System.nanoTime()));
            before.accept(d.eventId());
            return PublishOutcome.acked(d.eventId());
        };
    }

    private boolean published(UUID id) {
        return publishes.stream().anyMatch(p -> p.id().equals(id));
    }

    // ====================================================================================== findings

    /**
     * a, b, c; batch size 1, depth 3, one worker. b's publish call blocks (waiting for confirms) while c is queued
     * behind it; an outside party interrupts the publish thread (the engine's convention: an interrupted wait ends,
     * WakeSignal.pause answers false); the publisher restores the flag and throws, as the adapters do. b is recorded
     * as failed, and the publish stage takes c and waits out b's pause. Returns the publish thread and the rows.
     */
    private Interrupted aPublishThreadInterruptedDuringBsPublish() {
        UUID a = oneEventOf("a");
        UUID b = oneEventOf("b");
        UUID c = oneEventOf("c");
        AtomicReference<Thread> publishThread = new AtomicReference<>();
        CountDownLatch bBlocks = gate();
        AtomicBoolean bBreaks = new AtomicBoolean(true);
        answering(id -> {
            if (id.equals(b) && bBreaks.compareAndSet(true, false)) {
                publishThread.set(Thread.currentThread());
                try {
                    bBlocks.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while waiting for confirms", e);
                }
                throw new IllegalStateException("no interrupt came");
            }
        });
        CountDownLatch bRecorded = new CountDownLatch(1);
        store.afterReschedule = ids -> {
            if (ids.contains(b)) {
                bRecorded.countDown();
            }
        };

        DeliveryEngine engine = started(EngineHarness.oneWorker(3, LONG_INTERVAL).batchSize(1));

        await("b publishing, c queued").atMost(SOON)
                .until(() -> publishThread.get() != null && fake.row(c).lease != null);
        publishThread.get().interrupt();
        EngineHarness.waitFor(bRecorded, SOON.toMillis());
        assertThat(bRecorded.getCount()).as("b's failure recorded").isZero();
        return new Interrupted(engine, publishThread.get(), a, b, c);
    }

    private record Interrupted(DeliveryEngine engine, Thread publishThread, UUID a, UUID b, UUID c) {
    }

    /**
     * Finding 1 (livelock/spin, new with 6fab267). With its interrupt flag set, the publish thread's
     * signal.pause(left) returns false at once (awaitNanos throws, the flag is set again); awaitTheStagePause now
     * loops while a pause is left and the signal is not shut down, so it calls pause again and again: a busy spin for
     * the whole error pause, on every pause. Before the fix the one pause call returned and the stage went on (it did
     * not wait the pause out, a smaller, older fault); a WakeSignal wait ended by interruption is otherwise treated as
     * the end of the wait everywhere in the engine. The publish thread should burn next to no CPU while it waits.
     */
    @Test
    void aPublishStageLeftInterruptedWaitsOutTheErrorPauseWithoutSpinning() {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        Assumptions.assumeTrue(threads.isThreadCpuTimeSupported(), "thread CPU time");
        if (!threads.isThreadCpuTimeEnabled()) {
            threads.setThreadCpuTimeEnabled(true);
        }
        Interrupted s = aPublishThreadInterruptedDuringBsPublish();
        long id = s.publishThread().getId();
        long cpuBefore = threads.getThreadCpuTime(id);
        long wallBefore = System.nanoTime();
        EngineHarness.pause(600); // inside b's 1 s pause: the stage waits before c
        long cpu = threads.getThreadCpuTime(id) - cpuBefore;
        long wall = System.nanoTime() - wallBefore;
        assertThat(published(s.c())).as("c, still waiting for b's pause").isFalse();
        assertThat(TimeUnit.NANOSECONDS.toMillis(cpu))
                .as("CPU ms the publish thread used while it waited %d ms of b's error pause (a wait uses ~0)",
                        TimeUnit.NANOSECONDS.toMillis(wall))
                .isLessThan(150);
    }

    /**
     * Finding 2 (older than 6fab267, since pipelining; at-least-once/liveness). Once the publish thread's interrupt
     * flag is set, Stage.next() on an empty queue catches the InterruptedException and answers null: the publish stage
     * (and after it the record stage) ends in silence, with no entry in deadThreads and health UP, while the worker
     * thread keeps claiming up to pipelineDepth batches into a queue nobody drains. d, written later and woken for,
     * is claimed and never published. (The serial worker ends on an interrupted wait too, also in silence.)
     */
    @Test
    void aWorkerWhosePublishThreadWasInterruptedOnceStillPublishesItsLaterBatches() {
        Interrupted s = aPublishThreadInterruptedDuringBsPublish();
        await("c published after b's pause").atMost(SOON).until(() -> published(s.c()));
        await("c sent").atMost(SOON).until(() -> fake.row(s.c()).status == RowStatus.SENT);
        EngineHarness.pause(300);

        UUID d = oneEventOf("d");
        s.engine().wake(WakeReason.EXTERNAL);
        EngineHarness.pause(SOON.toMillis());
        assertThat(published(d))
                .as("d published (d leased: %s; health %s; publish thread alive: %s)", fake.row(d).lease != null,
                        s.engine().health(), s.publishThread().isAlive())
                .isTrue();
    }

    // ====================================================================================== held

    /**
     * a's markSent on the record stage hangs; b's publish throws (T1) once c is queued; 300 ms into T1's pause (which
     * both the publish stage, before c, and the claimer wait out) a's markSent fails (T2). Returns T2 and the rows.
     */
    private Scenario aRecordFailsWhileTheWorkerWaitsOutAnEarlierPause(DeliverySettings.Builder settings) {
        UUID a = oneEventOf("a");
        UUID b = oneEventOf("b");
        UUID c = oneEventOf("c");
        AtomicBoolean bBreaks = new AtomicBoolean(true);
        answering(id -> {
            if (id.equals(b) && bBreaks.compareAndSet(true, false)) {
                await().atMost(SOON).until(() -> fake.row(c).lease != null);
                throw new IllegalStateException("broker connection broke");
            }
        });
        CountDownLatch aMayFail = gate();
        AtomicLong t2 = new AtomicLong();
        AtomicBoolean aFails = new AtomicBoolean(true);
        store.beforeMarkSent = (lease, ids) -> {
            if (ids.contains(a) && aFails.compareAndSet(true, false)) {
                EngineHarness.waitFor(aMayFail, 10_000);
                t2.set(System.nanoTime());
                throw new IllegalStateException("connection reset");
            }
        };
        CountDownLatch bRecorded = new CountDownLatch(1);
        store.afterReschedule = ids -> {
            if (ids.contains(b)) {
                bRecorded.countDown();
            }
        };

        DeliveryEngine engine = started(settings);

        EngineHarness.waitFor(bRecorded, SOON.toMillis());
        assertThat(bRecorded.getCount()).as("b's failure recorded by the publish stage").isZero();
        EngineHarness.pause(300);
        aMayFail.countDown();
        await("a's markSent failed").atMost(SOON).until(() -> t2.get() != 0);
        await().atMost(SOON).until(() -> listener.errors.contains("markSent: connection reset"));
        EngineHarness.pause(50); // the record stage asks for its pause a few instructions after onError
        return new Scenario(engine, t2.get(), a, b, c);
    }

    private record Scenario(DeliveryEngine engine, long t2, UUID a, UUID b, UUID c) {
    }

    /**
     * (1) Shutdown during the repeated waits: the publish stage (in awaitTheStagePause's loop, before c) and the
     * claimer (in its pause, with T2's request waiting for its `continue`) are both waiting when stop() comes with a
     * deadline shorter than what is left of T2's pause. Shutdown ends both loops: stop finishes in time, c (queued)
     * is published and recorded within the deadline, and no thread is left running.
     */
    @Test
    void heldStopDuringTheRepeatedPauseWaitsEndsEveryThreadWithinItsDeadline() {
        Scenario s = aRecordFailsWhileTheWorkerWaitsOutAnEarlierPause(
                EngineHarness.oneWorker(3, LONG_INTERVAL).batchSize(1));
        assertThat(published(s.c())).as("c, still waiting").isFalse();

        boolean inTime = s.engine().stop(Duration.ofMillis(700)); // T2's pause has about 950 ms left
        assertThat(inTime).as("stop finished by its deadline").isTrue();
        assertThat(fake.row(s.c()).status).as("c, queued at shutdown").isEqualTo(RowStatus.SENT);
        await("worker threads ended").atMost(SOON).until(() -> Thread.getAllStackTraces().keySet().stream()
                .noneMatch(t -> t.getName().startsWith("queuebox-worker-") && t.isAlive()));
    }

    /**
     * (1)/(2) After a record failure during its pause the claimer claims again without spinning (a handful of claims in
     * 2.5 s, not hundreds), and the rows a and b come out sent once a's lease lapses / b's retry is due. Written
     * against 6fab267's extra look for a newer pause, which was taken out again (see DeliveryEngineRecordStageReviewTest,
     * finding 2); what it checks holds without it.
     */
    @Test
    void afterARecordFailureDuringItsPauseTheClaimerClaimsAgainWithoutSpinning() {
        Scenario s = aRecordFailsWhileTheWorkerWaitsOutAnEarlierPause(
                EngineHarness.oneWorker(3, LONG_INTERVAL).batchSize(1).leaseLength(Duration.ofMillis(1500)));
        int claimsAtT2 = fake.claimCalls.get();
        await("b and c sent").atMost(Duration.ofSeconds(5))
                .until(() -> fake.row(s.b()).status == RowStatus.SENT && fake.row(s.c()).status == RowStatus.SENT);
        await("a sent once its lease lapsed").atMost(Duration.ofSeconds(6))
                .until(() -> fake.row(s.a()).status == RowStatus.SENT);
        EngineHarness.pause(500);
        int claims = fake.claimCalls.get() - claimsAtT2;
        assertThat(claims).as("claims since T2").isBetween(1, 12);
    }

    /**
     * (3) No publish on a stale lease check. Lease 1.5 s, depth 3, batch size 1: b's publish is held until c, queued,
     * is late, so the publish stage renews c before publishing it; b's markSent (b was published cleanly) fails during that renewal (T2). The
     * renewal succeeds, but a pause is left, so the stage waits out T2's pause; the test steals c's rows the moment
     * the renewal returned. After the pause the stage checks c's lease again (the first renewal is now 1 s old, too
     * close to its lease), the fenced renewal finds the rows another claimer's, and c is handed back, never
     * published by this relay.
     */
    @Test
    void heldALeaseLostWhileThePublishStageWaitsOutAFailureDuringItsLeaseCheckIsCheckedAgainAndNotPublished() {
        UUID a = oneEventOf("a");
        UUID b = oneEventOf("b");
        UUID c = oneEventOf("c");
        CountDownLatch bMayAnswer = gate();
        answering(id -> {
            if (id.equals(b)) {
                EngineHarness.waitFor(bMayAnswer, 10_000);
            }
        });
        CountDownLatch bMayFail = gate();
        AtomicLong t2 = new AtomicLong();
        store.beforeMarkSent = (lease, ids) -> {
            if (ids.contains(b)) {
                EngineHarness.waitFor(bMayFail, 10_000);
                t2.set(System.nanoTime());
                throw new IllegalStateException("connection reset");
            }
        };
        AtomicInteger stageRenewals = new AtomicInteger();
        AtomicLong stolenAt = new AtomicLong();
        store.beforeRenew = lease -> {
            if (Thread.currentThread().getName().endsWith("-publish") && stageRenewals.incrementAndGet() == 1) {
                bMayFail.countDown();
                await().atMost(SOON).until(() -> listener.errors.contains("markSent: connection reset"));
                EngineHarness.pause(200);
            }
        };
        store.afterRenew = lease -> {
            if (Thread.currentThread().getName().endsWith("-publish") && stageRenewals.get() == 1
                    && stolenAt.get() == 0) {
                fake.stealLease(c, Duration.ofSeconds(30)); // another relay's claim, right after the renewal
                stolenAt.set(System.nanoTime());
            }
        };

        started(EngineHarness.oneWorker(3, LONG_INTERVAL).batchSize(1).leaseLength(Duration.ofMillis(1500)));

        await("a published, b publishing, c claimed").atMost(SOON)
                .until(() -> published(a) && published(b) && fake.row(c).lease != null);
        await("a sent").atMost(SOON).until(() -> fake.row(a).status == RowStatus.SENT);
        Instant cLeaseUntil = fake.row(c).leaseUntil;
        Duration untilLate = Duration.between(Instant.now(), cLeaseUntil.minusMillis(450));
        if (!untilLate.isNegative()) {
            EngineHarness.pause(untilLate.toMillis());
        }
        bMayAnswer.countDown();

        await("c checked again after the pause").atMost(Duration.ofSeconds(5)).until(() -> stageRenewals.get() >= 2);
        EngineHarness.pause(300);
        assertThat(t2.get()).as("b's markSent failed during c's renewal").isNotZero();
        assertThat(stolenAt.get()).as("c stolen after its first renewal").isNotZero();
        assertThat(published(c)).as("c published on a lease another relay holds").isFalse();
        assertThat(listener.errors).anyMatch(e -> e.contains("another claimer took 1 of its 1 rows"));
    }

    /**
     * (1)/(4) A failure that keeps repeating: every markSent fails for 2.5 s (depth 3, batch size 1, lease 600 ms, so
     * rows lapse and are claimed again). The publish stage's do/while and the claimer's `continue` neither spin nor
     * starve: publishes in the failing window stay a handful per error pause (a spin would be hundreds), nothing is
     * marked sent unacked, every row ends sent once the store recovers, and stop finishes in time.
     */
    @Test
    void heldAMarkSentThatKeepsFailingCostsAFewPublishesPerPauseThenEveryRowIsSentAndStopEndsInTime() {
        List<UUID> rows = new CopyOnWriteArrayList<>();
        for (int i = 0; i < 6; i++) {
            rows.add(oneEventOf("r" + i));
        }
        answering(id -> { });
        AtomicBoolean failing = new AtomicBoolean(true);
        List<UUID> markedUnacked = new CopyOnWriteArrayList<>();
        store.beforeMarkSent = (lease, ids) -> {
            for (UUID id : ids) {
                if (!publisher.acked.contains(id)) {
                    markedUnacked.add(id);
                }
            }
            if (failing.get()) {
                throw new IllegalStateException("connection reset");
            }
        };

        DeliveryEngine engine = started(EngineHarness.oneWorker(3, LONG_INTERVAL).batchSize(1)
                .leaseLength(Duration.ofMillis(600)));
        await("the first failed record").atMost(SOON).until(() -> listener.errors.contains("markSent: connection reset"));
        EngineHarness.pause(2_500);
        int publishesWhileFailing = publishes.size();
        failing.set(false);

        await("every row sent").atMost(Duration.ofSeconds(15))
                .until(() -> rows.stream().allMatch(id -> fake.row(id).status == RowStatus.SENT));
        assertThat(publishesWhileFailing).as("publishes while every markSent failed (%s pauses)",
                2_500 / ERROR_PAUSE.toMillis()).isBetween(1, 15);
        assertThat(markedUnacked).as("rows marked sent without an ack").isEmpty();
        assertThat(engine.stop(Duration.ofSeconds(2))).as("stop in time").isTrue();
    }
}
