package io.queuebox.bootstrap.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ConfigCheckCommandTest {

    @TempDir
    Path dir;

    @Test
    void aFileWithThreeMistakesReportsAllThreeWithKeysAndReasonsAndExits2() throws IOException {
        Path file = Files.writeString(dir.resolve("bad.yaml"), """
                database:
                  url: jdbc:postgresql://db:5432/app
                broker:
                  type: rabbitmq
                outbox:
                  batchSize: -5
                  ordering: sometimes
                  pollIntervalMillis: 100
                """);

        CliRun run = CliRun.of(Map.of(), "config", "check", "--config", file.toString());

        assertThat(run.exitCode()).isEqualTo(ExitCodes.BAD_CONFIGURATION);
        assertThat(run.err())
                .contains("3 configuration problem(s)")
                .contains("outbox.batchSize = '-5': out of range; allowed: an integer from 1 to 10000")
                .contains("outbox.ordering = 'sometimes': not an allowed value; allowed: one of per-aggregate, none")
                .contains("outbox.pollIntervalMillis: unknown key")
                .contains("did you mean outbox.pollIntervalMs?");
        assertThat(run.out()).isEmpty();
    }

    @Test
    void aValidFilePrintsTheEffectiveConfigurationWithSecretsMaskedAndExits0() throws IOException {
        Path file = Files.writeString(dir.resolve("good.yaml"), """
                database:
                  url: jdbc:postgresql://db:5432/app
                  username: relay
                  password: topsecret
                broker:
                  type: kafka
                  kafka:
                    bootstrap.servers: kafka-1:9092
                """);

        CliRun run = CliRun.of(Map.of("QUEUEBOX_OUTBOX_WORKERS", "2"), "--config", file.toString(), "config", "check");

        assertThat(run.exitCode()).as(run.err()).isEqualTo(ExitCodes.OK);
        assertThat(run.out())
                .contains("database.password = ******")
                .contains("outbox.workers = 2  (env QUEUEBOX_OUTBOX_WORKERS)")
                .contains("outbox.batchSize = 100  (default)")
                .doesNotContain("topsecret");
    }

    @Test
    void anUnknownOptionIsABadCommandLine() {
        CliRun run = CliRun.of(Map.of(), "config", "check", "--no-such-option");

        assertThat(run.exitCode()).isEqualTo(ExitCodes.BAD_CONFIGURATION);
        assertThat(run.err()).contains("--no-such-option");
    }

    @Test
    void versionAndHelpAnswer() {
        CliRun version = CliRun.of(Map.of(), "--version");
        CliRun help = CliRun.of(Map.of(), "--help");

        assertThat(version.exitCode()).isZero();
        assertThat(version.out()).startsWith("QueueBox 0.");
        assertThat(help.exitCode()).isZero();
        assertThat(help.out()).contains("migrate").contains("config").contains("Exit codes:")
                .contains("QUEUEBOX_OUTBOX_POLL_INTERVAL_MS");
    }
}
