package io.queuebox.bootstrap.capture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.bootstrap.cli.Cli;
import io.queuebox.capture.FileCaptureStateDirectory;
import io.queuebox.domain.CaptureStatus.FaultReason;
import io.queuebox.domain.CaptureStatus.State;
import io.queuebox.domain.CaptureSupervisor;
import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureSettings;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.postgres.PostgresOutbox;
import io.queuebox.postgres.PostgresOutboxSettings;
import io.queuebox.testkit.publisher.RecordingPublisher;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Capture in postgres-logical mode against a real PostgreSQL: every fault of the product's page stops
 * capture with its named reason, does not retry, and costs no message, because delivery goes on
 * through SQL on the reconciliation timer.
 */
class PostgresCaptureTest {

    @TempDir
    Path stateDir;

    private CaptureTestBed bed;

    @BeforeEach
    void createDatabase() throws Exception {
        bed = new CaptureTestBed();
    }

    @AfterEach
    void dropDatabase() throws Exception {
        bed.close();
    }

    @Test
    void aCommittedRowWakesDeliveryWithoutWaitingForTheTimer() throws Exception {
        CaptureSupervisor supervisor = bed.supervisor(bed.settings(stateDir));
        RecordingPublisher publisher = RecordingPublisher.acking();
        bed.engine(supervisor, publisher, Duration.ofSeconds(120));
        awaitStreaming(supervisor);

        List<OutboxEvent> written = bed.write(3);

        // The timer is two minutes away: only a capture wake-up delivers within seconds.
        await().atMost(Duration.ofSeconds(15)).until(() -> publisher.deliveredIds().containsAll(ids(written)));
    }

    @Test
    void anEmptyVolumeWhileTheTableSaysCaptureRanStopsCapture() throws Exception {
        runCaptureOnceAndStop();
        new FileCaptureStateDirectory(stateDir).clear();

        assertFaultKeepsDelivering(bed.settings(stateDir), FaultReason.STATE_MISSING, "volume is missing or empty");
    }

    /** Issue 13: an empty volume next to a row of other settings used to start fresh, on a new slot, in silence. */
    @Test
    void anEmptyVolumeAfterASettingsChangeStopsCaptureNamingTheSetting() throws Exception {
        runCaptureOnceAndStop();
        new FileCaptureStateDirectory(stateDir).clear();

        assertFaultKeepsDelivering(bed.settings(stateDir, fp -> new CaptureFingerprint(fp.slot() + "_new",
                fp.publication(), fp.schema(), fp.table(), fp.host(), fp.database())), FaultReason.STATE_MISSING,
                "with other settings than now: slot (was '" + bed.slot + "', now '" + bed.slot + "_new')");
        assertThat(new FileCaptureStateDirectory(stateDir).readIdentity()).as("no fresh identity").isEmpty();
    }

    /** The recovery the how-to gives for STATE_MISSING with other settings: reset the identity it names, restart. */
    @Test
    void resettingTheNamedIdentityAfterStateMissingStartsCaptureFresh() throws Exception {
        runCaptureOnceAndStop();
        CaptureIdentity old = bed.identityIn(stateDir);
        new FileCaptureStateDirectory(stateDir).clear();
        CaptureSettings moved = bed.settings(stateDir, fp -> new CaptureFingerprint(fp.slot() + "_new",
                fp.publication(), fp.schema(), fp.table(), fp.host(), fp.database()));
        CaptureSupervisor faulted = bed.supervisor(moved);
        faulted.start(reason -> { });
        awaitState(faulted, State.FAULT);
        assertThat(faulted.status().message()).contains("as identity " + old);
        faulted.close();

        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Cli.execute(Map.of("QUEUEBOX_DATABASE_URL", bed.url(),
                        "QUEUEBOX_BROKER_TYPE", "rabbitmq", "QUEUEBOX_OUTBOX_CAPTURE_ENABLED", "true",
                        "QUEUEBOX_OUTBOX_CAPTURE_MODE", "postgres-logical",
                        "QUEUEBOX_OUTBOX_CAPTURE_STATE_DIRECTORY", stateDir.toString(),
                        "QUEUEBOX_OUTBOX_CAPTURE_SLOT", moved.fingerprint().slot(),
                        "QUEUEBOX_OUTBOX_CAPTURE_PUBLICATION", "qb_pub"),
                new PrintWriter(out, true), new PrintWriter(err, true),
                "capture", "reset", "--identity", old.value(), "--confirm");
        assertThat(code).as(err.toString()).isZero();

        CaptureSupervisor fresh = bed.supervisor(moved);
        RecordingPublisher publisher = RecordingPublisher.acking();
        bed.engine(fresh, publisher, Duration.ofSeconds(120));
        awaitState(fresh, State.RUNNING);
        assertThat(bed.identityIn(stateDir)).as("a new identity").isNotEqualTo(old);
        List<OutboxEvent> written = bed.write(3);
        await().atMost(Duration.ofSeconds(30)).until(() -> publisher.deliveredIds().containsAll(ids(written)));
    }

    @Test
    void stateFilesOfAnotherInstanceStopCapture() throws Exception {
        runCaptureOnceAndStop();
        new FileCaptureStateDirectory(stateDir).writeIdentity(new CaptureIdentity("another-instance"));

        assertFaultKeepsDelivering(bed.settings(stateDir), FaultReason.FOREIGN_STATE, "different instance");
    }

    @ParameterizedTest
    @ValueSource(strings = {"slot", "publication", "schema", "table", "host", "database"})
    void aChangedSettingStopsCaptureNamingTheSetting(String setting) throws Exception {
        runCaptureOnceAndStop();
        UnaryOperator<CaptureFingerprint> change = prepareChanged(setting);

        assertFaultKeepsDelivering(bed.settings(stateDir, change), FaultReason.SETTINGS_CHANGED, setting + " (was ");
    }

    @Test
    void aSlotDroppedByHandStopsCaptureInsteadOfSkippingTheGap() throws Exception {
        runCaptureOnceAndStop();
        bed.dropSlot();

        assertFaultKeepsDelivering(bed.settings(stateDir), FaultReason.SLOT_MISSING, bed.slot);
        assertThat(bed.slotExists()).as("QueueBox created no new slot").isFalse();
    }

    @Test
    void aSecondOwnerOfTheIdentityReportsItAndKeepsDelivering() throws Exception {
        CaptureSupervisor owner = bed.supervisor(bed.settings(stateDir));
        owner.start(reason -> { });
        awaitState(owner, State.RUNNING);

        assertFaultKeepsDelivering(bed.settings(stateDir), FaultReason.IDENTITY_OWNED, "already has an owner");
        assertThat(owner.status().state()).isEqualTo(State.RUNNING);
    }

    @Test
    void aKilledConnectorIsRestartedWithBackoffWhileDeliveryGoesOn() throws Exception {
        CaptureSupervisor supervisor = bed.supervisor(bed.settings(stateDir));
        RecordingPublisher publisher = RecordingPublisher.acking();
        bed.engine(supervisor, publisher, CaptureTestBed.RECONCILIATION);
        awaitStreaming(supervisor);

        assertThat(bed.killConnector()).isTrue();
        await().atMost(Duration.ofSeconds(30)).until(() -> supervisor.status().state() == State.RETRYING);
        assertThat(supervisor.health().isUp()).as("capture is unhealthy while it retries").isFalse();
        List<OutboxEvent> duringOutage = bed.write(5);
        await().atMost(Duration.ofSeconds(15)).until(() -> publisher.deliveredIds().containsAll(ids(duringOutage)));

        await().atMost(Duration.ofSeconds(30)).until(() -> supervisor.status().state() == State.RUNNING
                && bed.connectorsCreated.get() == 2);
        assertThat(supervisor.health().isUp()).isTrue();
    }

    /**
     * Issue 13: the lock was checked only when the connector restarted, so a terminated lock session went unnoticed
     * while the replication connection kept streaming. Now it is found within one reconciliation interval, reported
     * as OWNERSHIP_LOST while delivery goes on, and, nobody else holding the lock, taken again.
     */
    @Test
    void aTerminatedLockSessionIsReportedWithinOneReconciliationIntervalWhileDeliveryGoesOn() throws Exception {
        CaptureSupervisor supervisor = bed.supervisor(bed.settings(stateDir));
        RecordingPublisher publisher = RecordingPublisher.acking();
        bed.engine(supervisor, publisher, CaptureTestBed.RECONCILIATION);
        awaitStreaming(supervisor);
        CaptureIdentity identity = bed.identityIn(stateDir);

        long killedAt = System.nanoTime();
        assertThat(bed.killLockSession()).as("the owner's lock session was terminated").isEqualTo(1);
        await().pollInterval(Duration.ofMillis(5)).atMost(Duration.ofSeconds(10))
                .until(() -> supervisor.status().fault().filter(FaultReason.OWNERSHIP_LOST::equals).isPresent());
        Duration detectedAfter = Duration.ofNanos(System.nanoTime() - killedAt);
        System.out.printf("[capture] lock loss reported %d ms after the kill (reconciliation interval %d ms)%n",
                detectedAfter.toMillis(), CaptureTestBed.RECONCILIATION.toMillis());

        assertThat(detectedAfter).as("reported within one reconciliation interval plus slack")
                .isLessThanOrEqualTo(CaptureTestBed.RECONCILIATION.plusMillis(1000));
        assertThat(supervisor.status().state()).isEqualTo(State.FAULT);
        assertThat(supervisor.status().message()).contains("OWNERSHIP_LOST").contains(identity.value());
        assertThat(supervisor.health().isUp()).as("the advisory component reports the fault").isFalse();
        List<OutboxEvent> afterKill = bed.write(5);
        await().atMost(Duration.ofSeconds(15)).until(() -> publisher.deliveredIds().containsAll(ids(afterKill)));

        // Nobody else holds the lock: after the restart backoff the same identity streams again.
        await().atMost(Duration.ofSeconds(60)).until(() -> supervisor.status().state() == State.RUNNING
                && bed.connectorsCreated.get() >= 2);
        assertThat(supervisor.status().identity()).contains(identity);
        assertThat(supervisor.status().fault()).isEmpty();
    }

    @Test
    void aFreshSnapshotAfterTheDocumentedRecoveryDeliversNoMessageTwice() throws Exception {
        RecordingPublisher publisher = RecordingPublisher.acking();
        CaptureSupervisor first = bed.supervisor(bed.settings(stateDir));
        bed.engine(first, publisher, CaptureTestBed.RECONCILIATION);
        awaitStreaming(first);
        List<OutboxEvent> before = bed.write(20);
        await().atMost(Duration.ofSeconds(15)).until(() -> publisher.deliveredIds().containsAll(ids(before)));
        CaptureIdentity identity = bed.identityIn(stateDir);
        first.close();
        bed.dropSlot();

        // Recovery, as the how-to describes it: forget the identity, clear the volume, start with a snapshot.
        assertThat(PostgresOutbox.captureStateStore(bed.dataSource, PostgresOutboxSettings.defaults())
                .forget(identity)).isTrue();
        new FileCaptureStateDirectory(stateDir).clear();
        List<OutboxEvent> pendingAtRecovery = bed.write(10);
        CaptureSupervisor recovered = bed.supervisor(bed.settings(stateDir), "initial");
        bed.engine(recovered, publisher, CaptureTestBed.RECONCILIATION);
        awaitState(recovered, State.RUNNING);
        List<OutboxEvent> after = bed.write(10);

        await().atMost(Duration.ofSeconds(30)).until(() -> publisher.deliveredIds()
                .containsAll(ids(pendingAtRecovery)) && publisher.deliveredIds().containsAll(ids(after)));
        List<UUID> delivered = publisher.deliveredIds();
        assertThat(new HashSet<>(delivered)).as("no event id delivered twice").hasSize(delivered.size());
        assertThat(delivered).hasSize(40);
        assertThat(bed.identityIn(stateDir)).isNotEqualTo(identity);
    }

    private void assertFaultKeepsDelivering(CaptureSettings settings, FaultReason reason, String messagePart)
            throws Exception {
        int connectorsBefore = bed.connectorsCreated.get();
        CaptureSupervisor supervisor = bed.supervisor(settings);
        RecordingPublisher publisher = RecordingPublisher.acking();
        bed.engine(supervisor, publisher, CaptureTestBed.RECONCILIATION);

        awaitState(supervisor, State.FAULT);
        assertThat(supervisor.status().fault()).contains(reason);
        assertThat(supervisor.status().message()).contains(messagePart);
        assertThat(supervisor.health().isUp()).as("the advisory component reports the fault").isFalse();
        assertThat(supervisor.health().details()).containsEntry("fault", reason.name());

        List<OutboxEvent> duringFault = bed.write(5);
        await().atMost(Duration.ofSeconds(15)).until(() -> publisher.deliveredIds().containsAll(ids(duringFault)));
        // Longer than the first restart delay (1 s): a fault that needs a decision is never retried.
        CaptureTestBed.pause(1500);
        assertThat(supervisor.status().state()).isEqualTo(State.FAULT);
        assertThat(bed.connectorsCreated.get()).as("no connector started").isEqualTo(connectorsBefore);
    }

    private void runCaptureOnceAndStop() throws Exception {
        CaptureSupervisor first = bed.supervisor(bed.settings(stateDir));
        first.start(reason -> { });
        awaitStreaming(first);
        first.close();
        assertThat(Files.exists(stateDir.resolve("offsets.dat"))).isTrue();
    }

    /** Running, and the slot exists (the connector creates it while starting). */
    private void awaitStreaming(CaptureSupervisor supervisor) {
        awaitState(supervisor, State.RUNNING);
        await().atMost(Duration.ofSeconds(60)).until(bed::slotExists);
        // The connector flushes a first offset once it streams (a heartbeat every 10 s, a flush every 5 s). A new
        // logical slot streams only after every transaction running at its creation has ended, anywhere on the
        // server: another suite's open transaction (a claim holding row locks for its lease) delays it.
        await().atMost(Duration.ofSeconds(90)).until(() -> Files.exists(stateDir.resolve("offsets.dat"))
                || supervisor.status().state() != State.RUNNING);
    }

    private UnaryOperator<CaptureFingerprint> prepareChanged(String setting) throws Exception {
        switch (setting) {
            case "slot":
                return fp -> new CaptureFingerprint(fp.slot() + "_new", fp.publication(), fp.schema(), fp.table(),
                        fp.host(), fp.database());
            case "publication":
                bed.execute("CREATE PUBLICATION qb_pub_new FOR TABLE public.queuebox_outbox WITH (publish = 'insert')");
                return fp -> new CaptureFingerprint(fp.slot(), "qb_pub_new", fp.schema(), fp.table(), fp.host(),
                        fp.database());
            case "schema":
                bed.execute("CREATE SCHEMA other");
                PostgresOutbox.createSchema(bed.dataSource, PostgresOutboxSettings.builder().schema("other").build());
                bed.execute("ALTER PUBLICATION qb_pub ADD TABLE other.queuebox_outbox");
                return fp -> new CaptureFingerprint(fp.slot(), fp.publication(), "other", fp.table(), fp.host(),
                        fp.database());
            case "table":
                PostgresOutbox.createSchema(bed.dataSource, PostgresOutboxSettings.builder().table("outbox_new").build());
                bed.execute("ALTER PUBLICATION qb_pub ADD TABLE public.outbox_new");
                return fp -> new CaptureFingerprint(fp.slot(), fp.publication(), fp.schema(), "outbox_new", fp.host(),
                        fp.database());
            case "host":
                return fp -> new CaptureFingerprint(fp.slot(), fp.publication(), fp.schema(), fp.table(),
                        "localhost", fp.database());
            case "database":
                return fp -> new CaptureFingerprint(fp.slot(), fp.publication(), fp.schema(), fp.table(), fp.host(),
                        fp.database() + "_moved");
            default:
                throw new IllegalArgumentException(setting);
        }
    }

    private static void awaitState(CaptureSupervisor supervisor, State state) {
        await().atMost(Duration.ofSeconds(60)).until(() -> supervisor.status().state() == state
                || (state != State.FAULT && supervisor.status().state() == State.FAULT));
        assertThat(supervisor.status().state()).as(supervisor.status().message()).isEqualTo(state);
    }

    private static List<UUID> ids(List<OutboxEvent> events) {
        return events.stream().map(OutboxEvent::eventId).toList();
    }
}
