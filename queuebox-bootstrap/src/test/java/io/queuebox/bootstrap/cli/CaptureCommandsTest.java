package io.queuebox.bootstrap.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.bootstrap.TestDatabase;
import io.queuebox.capture.FileCaptureStateDirectory;
import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureLock;
import io.queuebox.ports.CaptureMode;
import io.queuebox.ports.CaptureStateStore;
import io.queuebox.postgres.PostgresOutbox;
import io.queuebox.postgres.PostgresOutboxSettings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.postgresql.ds.PGSimpleDataSource;

/** capture status and capture reset, in-process against a fresh PostgreSQL database. */
class CaptureCommandsTest {

    private static final CaptureIdentity IDENTITY = new CaptureIdentity("faulted-identity");

    @TempDir
    Path stateDir;

    private TestDatabase database;
    private Map<String, String> env;
    private CaptureStateStore stateStore;
    private PGSimpleDataSource dataSource;

    @BeforeEach
    void aCaptureIdentityThatFaulted() throws Exception {
        database = TestDatabase.create("capturecli");
        env = Map.of("QUEUEBOX_DATABASE_URL", database.url(), "QUEUEBOX_BROKER_TYPE", "rabbitmq",
                "QUEUEBOX_OUTBOX_CAPTURE_ENABLED", "true", "QUEUEBOX_OUTBOX_CAPTURE_MODE", "postgres-logical",
                "QUEUEBOX_OUTBOX_CAPTURE_STATE_DIRECTORY", stateDir.toString(),
                "QUEUEBOX_OUTBOX_CAPTURE_SLOT", "qb_cli_slot", "QUEUEBOX_OUTBOX_CAPTURE_PUBLICATION", "qb_cli_pub");
        assertThat(CliRun.of(env, "migrate").exitCode()).isZero();
        dataSource = new PGSimpleDataSource();
        dataSource.setUrl(database.url());
        stateStore = PostgresOutbox.captureStateStore(dataSource, PostgresOutboxSettings.defaults());
        stateStore.recordStart(IDENTITY, CaptureMode.POSTGRES_LOGICAL,
                new CaptureFingerprint("qb_cli_slot", "qb_cli_pub", "public", "queuebox_outbox", "127.0.0.1", "test"));
        stateStore.recordStatus(IDENTITY, "FAULT", "SLOT_MISSING: the replication slot 'qb_cli_slot' is missing");
        FileCaptureStateDirectory directory = new FileCaptureStateDirectory(stateDir);
        directory.writeIdentity(IDENTITY);
        Files.writeString(directory.offsetsFile(), "offsets");
    }

    @AfterEach
    void drop() {
        database.close();
    }

    @Test
    void statusShowsTheIdentityItsFaultOwnerSlotAndSourceProblems() {
        CliRun status = CliRun.of(env, "capture", "status");

        assertThat(status.exitCode()).as(status.err()).isZero();
        assertThat(status.out())
                .contains("identity file:   faulted-identity")
                .contains("offsets:         present")
                .contains("identity:        faulted-identity (this state directory)")
                .contains("FAULT: SLOT_MISSING: the replication slot 'qb_cli_slot' is missing")
                .contains("owner:         none")
                .contains("slot:            qb_cli_slot does not exist")
                .contains("source problem:");
    }

    @Test
    void resetNeedsConfirmationAndThenForgetsTheIdentityAndClearsItsFiles() {
        CliRun unconfirmed = CliRun.of(env, "capture", "reset", "--identity", IDENTITY.value());
        assertThat(unconfirmed.exitCode()).isEqualTo(ExitCodes.BAD_CONFIGURATION);
        assertThat(unconfirmed.err()).contains("--confirm");
        assertThat(stateStore.find(IDENTITY)).isPresent();

        CliRun reset = CliRun.of(env, "capture", "reset", "--identity", IDENTITY.value(), "--confirm");

        assertThat(reset.exitCode()).as(reset.err()).isZero();
        assertThat(reset.out()).contains("row of faulted-identity deleted").contains("cleared")
                .contains("qb_cli_slot was not touched");
        assertThat(stateStore.find(IDENTITY)).isEmpty();
        assertThat(new FileCaptureStateDirectory(stateDir).readIdentity()).isEmpty();
        assertThat(new FileCaptureStateDirectory(stateDir).hasOffsets()).isFalse();
    }

    @Test
    void resetRefusesWhileAProcessOwnsTheIdentity() {
        Optional<CaptureLock.Held> owner = PostgresOutbox.captureLock(dataSource).tryAcquire(IDENTITY);
        assertThat(owner).isPresent();
        try (CaptureLock.Held held = owner.get()) {
            CliRun reset = CliRun.of(env, "capture", "reset", "--identity", IDENTITY.value(), "--confirm");

            assertThat(reset.exitCode()).isEqualTo(ExitCodes.FATAL);
            assertThat(reset.err()).contains("already has an owner");
            assertThat(stateStore.find(IDENTITY)).isPresent();
            assertThat(new FileCaptureStateDirectory(stateDir).readIdentity()).contains(IDENTITY);
        }
    }
}
