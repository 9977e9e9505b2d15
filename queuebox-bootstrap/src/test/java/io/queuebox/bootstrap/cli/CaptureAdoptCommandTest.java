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
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * capture adopt, in-process against a fresh PostgreSQL database: it writes the identity file of a recorded
 * identity into an empty state directory, and refuses, before writing anything, every case a start would
 * refuse. The whole failover with real capture is in {@code CaptureFailoverTest}.
 */
class CaptureAdoptCommandTest {

    private static final CaptureIdentity IDENTITY = new CaptureIdentity("moved-identity");

    @TempDir
    Path stateDir;

    private TestDatabase database;
    private Map<String, String> env;
    private CaptureStateStore stateStore;
    private PGSimpleDataSource dataSource;
    private CaptureFingerprint current;

    @BeforeEach
    void anIdentityThatRanWithTheCurrentSettings() {
        database = TestDatabase.create("captureadopt");
        env = new HashMap<>(Map.of("QUEUEBOX_DATABASE_URL", database.url(), "QUEUEBOX_BROKER_TYPE", "rabbitmq",
                "QUEUEBOX_OUTBOX_CAPTURE_ENABLED", "true", "QUEUEBOX_OUTBOX_CAPTURE_MODE", "postgres-logical",
                "QUEUEBOX_OUTBOX_CAPTURE_STATE_DIRECTORY", stateDir.resolve("new-volume").toString(),
                "QUEUEBOX_OUTBOX_CAPTURE_SLOT", "qb_adopt_slot", "QUEUEBOX_OUTBOX_CAPTURE_PUBLICATION", "qb_adopt_pub"));
        assertThat(CliRun.of(env, "migrate").exitCode()).isZero();
        dataSource = new PGSimpleDataSource();
        dataSource.setUrl(database.url());
        stateStore = PostgresOutbox.captureStateStore(dataSource, PostgresOutboxSettings.defaults());
        URI uri = URI.create(database.url().substring("jdbc:".length()));
        String name = uri.getPath().substring(1);
        current = new CaptureFingerprint("qb_adopt_slot", "qb_adopt_pub", "public", "queuebox_outbox", uri.getHost(),
                name);
        stateStore.recordStart(IDENTITY, CaptureMode.POSTGRES_LOGICAL, current);
    }

    @AfterEach
    void drop() {
        database.close();
    }

    private FileCaptureStateDirectory newVolume() {
        return new FileCaptureStateDirectory(stateDir.resolve("new-volume"));
    }

    @Test
    void adoptWritesTheIdentityFileIntoAnEmptyDirectory() {
        CliRun adopt = CliRun.of(env, "capture", "adopt", "--identity", IDENTITY.value());

        assertThat(adopt.exitCode()).as(adopt.err()).isZero();
        assertThat(adopt.out()).contains("identity file written for moved-identity")
                .contains("it resumes identity moved-identity on the replication slot qb_adopt_slot");
        assertThat(newVolume().readIdentity()).contains(IDENTITY);
        assertThat(newVolume().hasOffsets()).isFalse();
        assertThat(stateStore.find(IDENTITY)).as("the row is left as it was").isPresent();
        assertThat(PostgresOutbox.captureLock(dataSource).tryAcquire(IDENTITY)).as("the lock was given back")
                .hasValueSatisfying(CaptureLock.Held::close);
    }

    @Test
    void adoptingTheIdentityTheDirectoryAlreadyHoldsChangesNothing() throws Exception {
        newVolume().writeIdentity(IDENTITY);
        Files.writeString(newVolume().offsetsFile(), "offsets");

        CliRun adopt = CliRun.of(env, "capture", "adopt", "--identity", IDENTITY.value());

        assertThat(adopt.exitCode()).as(adopt.err()).isZero();
        assertThat(adopt.out()).contains("already holds identity moved-identity; nothing to do");
        assertThat(Files.readString(newVolume().offsetsFile())).isEqualTo("offsets");
    }

    @Test
    void adoptRefusesAnIdentityThatIsNotRecorded() {
        CliRun adopt = CliRun.of(env, "capture", "adopt", "--identity", "never-ran");

        assertThat(adopt.exitCode()).isEqualTo(ExitCodes.BAD_CONFIGURATION);
        assertThat(adopt.err()).contains("identity never-ran is not recorded in queuebox_capture_state")
                .contains("recorded: moved-identity");
        assertThat(newVolume().readIdentity()).isEmpty();
    }

    @Test
    void adoptRefusesAnIdentityThatRanWithOtherSettings() {
        env.put("QUEUEBOX_OUTBOX_CAPTURE_SLOT", "qb_other_slot");

        CliRun adopt = CliRun.of(env, "capture", "adopt", "--identity", IDENTITY.value());

        assertThat(adopt.exitCode()).isEqualTo(ExitCodes.BAD_CONFIGURATION);
        assertThat(adopt.err()).contains("ran with other settings than this configuration")
                .contains("slot (was 'qb_adopt_slot', now 'qb_other_slot')");
        assertThat(newVolume().readIdentity()).isEmpty();
    }

    @Test
    void adoptRefusesADirectoryOfAnotherIdentity() {
        newVolume().writeIdentity(new CaptureIdentity("someone-else"));

        CliRun adopt = CliRun.of(env, "capture", "adopt", "--identity", IDENTITY.value());

        assertThat(adopt.exitCode()).isEqualTo(ExitCodes.FATAL);
        assertThat(adopt.err()).contains("already belongs to identity someone-else");
        assertThat(newVolume().readIdentity()).contains(new CaptureIdentity("someone-else"));
    }

    @Test
    void adoptRefusesADirectoryWithOffsets() throws Exception {
        Files.createDirectories(stateDir.resolve("new-volume"));
        Files.writeString(newVolume().offsetsFile(), "offsets of nobody knows whom");

        CliRun adopt = CliRun.of(env, "capture", "adopt", "--identity", IDENTITY.value());

        assertThat(adopt.exitCode()).isEqualTo(ExitCodes.FATAL);
        assertThat(adopt.err()).contains("holds offsets but no identity file");
        assertThat(newVolume().readIdentity()).isEmpty();
    }

    @Test
    void adoptRefusesWhileAProcessOwnsTheIdentity() {
        Optional<CaptureLock.Held> owner = PostgresOutbox.captureLock(dataSource).tryAcquire(IDENTITY);
        assertThat(owner).isPresent();
        try (CaptureLock.Held held = owner.get()) {
            CliRun adopt = CliRun.of(env, "capture", "adopt", "--identity", IDENTITY.value());

            assertThat(adopt.exitCode()).isEqualTo(ExitCodes.FATAL);
            assertThat(adopt.err()).contains("identity moved-identity already has an owner: stop that process first");
            assertThat(newVolume().readIdentity()).isEmpty();
        }
    }

    @Test
    void adoptRefusesAnIdentityThatIsNoIdentity() {
        CliRun adopt = CliRun.of(env, "capture", "adopt", "--identity", "no spaces allowed");

        assertThat(adopt.exitCode()).isEqualTo(ExitCodes.BAD_CONFIGURATION);
        assertThat(adopt.err()).contains("--identity: capture identity must be");
    }
}
