package io.queuebox.bootstrap.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.bootstrap.TestDatabase;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A capture command refused by the database names the capture key at fault, not database.*. */
class CaptureConnectionRefusalTest {

    @TempDir
    Path stateDir;

    private TestDatabase database;
    private Map<String, String> env;

    @BeforeEach
    void migrated() {
        database = TestDatabase.create("capturerefusal");
        env = new HashMap<>(Map.of("QUEUEBOX_DATABASE_URL", database.url(), "QUEUEBOX_BROKER_TYPE", "rabbitmq",
                "QUEUEBOX_OUTBOX_CAPTURE_ENABLED", "true", "QUEUEBOX_OUTBOX_CAPTURE_MODE", "postgres-logical",
                "QUEUEBOX_OUTBOX_CAPTURE_STATE_DIRECTORY", stateDir.toString(),
                "QUEUEBOX_STARTUP_DATABASE_WAIT_MS", "5000"));
        assertThat(CliRun.of(env, "migrate").exitCode()).isZero();
    }

    @AfterEach
    void drop() {
        database.close();
    }

    @Test
    void anUnknownCaptureAccountIsNamedByItsOwnKey() {
        env.put("QUEUEBOX_OUTBOX_CAPTURE_CONNECTION_USERNAME", "ghost_capture");

        CliRun status = CliRun.of(env, "capture", "status");

        assertThat(status.exitCode()).as(status.err()).isEqualTo(ExitCodes.BAD_CONFIGURATION);
        assertThat(status.err()).contains("outbox.capture.connection.username = 'ghost_capture': the database refused the login")
                .doesNotContain("database.username");
    }

    @Test
    void aMissingCaptureDatabaseIsNamedByItsOwnKey() {
        env.put("QUEUEBOX_OUTBOX_CAPTURE_CONNECTION_DATABASE", "no_such_capture_db");

        CliRun status = CliRun.of(env, "capture", "status");

        assertThat(status.exitCode()).as(status.err()).isEqualTo(ExitCodes.BAD_CONFIGURATION);
        assertThat(status.err()).contains("outbox.capture.connection.database = ")
                .contains("fix its name in outbox.capture.connection.database");
    }
}
