package io.queuebox.bootstrap.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

class ExitCodeTest {

    @Test
    void migrateAgainstAnUnreachableDatabaseExits3AfterTheDeadline() {
        CliRun run = CliRun.of(Map.of(
                "QUEUEBOX_DATABASE_URL", "jdbc:postgresql://127.0.0.1:1/app",
                "QUEUEBOX_DATABASE_PASSWORD", "hunter2",
                "QUEUEBOX_BROKER_TYPE", "kafka",
                "QUEUEBOX_DATABASE_POOL_CONNECTION_TIMEOUT_MS", "250",
                "QUEUEBOX_STARTUP_DATABASE_WAIT_MS", "1000"), "migrate");

        assertThat(run.exitCode()).isEqualTo(ExitCodes.DATABASE_UNREACHABLE);
        assertThat(run.err()).contains("database unreachable").contains("startup.databaseWaitMs")
                .doesNotContain("hunter2");
    }

    @Test
    void badConfigurationExits2BeforeTouchingTheDatabase() {
        CliRun run = CliRun.of(Map.of("QUEUEBOX_DATABASE_URL", "jdbc:postgresql://127.0.0.1:1/app"), "migrate");

        assertThat(run.exitCode()).isEqualTo(ExitCodes.BAD_CONFIGURATION);
        assertThat(run.err()).contains("broker.type").contains("required");
    }
}
