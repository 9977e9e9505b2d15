package io.queuebox.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shaded jar on SQL Server, as an operator runs it: the database is chosen from the URL, its keys and
 * modes are validated for it, and the schema is printed. None of this connects to a server, so it runs
 * everywhere; what needs a real SQL Server is in adapter-sqlserver's Testcontainers suites.
 */
class SqlServerJarIT {

    private static final Path JAR = Path.of("target", "queuebox.jar").toAbsolutePath();
    private static final String URL = "jdbc:sqlserver://mssql.invalid:1433;databaseName=shop;encrypt=true";

    @TempDir
    Path dir;

    @Test
    void configCheckPassesWithASqlServerUrlAndSqlServerCdcAndPrintsItsEffectiveValues() throws Exception {
        Path file = Files.writeString(dir.resolve("queuebox.yaml"), """
                database:
                  url: %s
                  username: queuebox_relay
                  password: not-shown
                broker:
                  type: kafka
                  kafka:
                    bootstrap.servers: kafka.invalid:9092
                outbox:
                  capture:
                    enabled: true
                    mode: sqlserver-cdc
                    stateDirectory: %s
                """.formatted(URL, dir.resolve("state")));

        Result result = jar(Map.of(), "config", "check", "--config", file.toString());

        assertThat(result.exitCode()).as(result.output()).isZero();
        assertThat(result.output())
                .contains("Database: SQL Server")
                .contains("outbox.schema = dbo  (default for SQL Server)")
                .contains("outbox.capture.mode = sqlserver-cdc")
                .contains("outbox.capture.sqlserver.encrypt = true  (default)")
                .contains("database.password = ******")
                .doesNotContain("not-shown")
                .doesNotContain("outbox.capture.slot");
    }

    @Test
    void postgresLogicalOnASqlServerUrlFailsNamingTheKeyAndTheAllowedModes() throws Exception {
        Result result = jar(Map.of("QUEUEBOX_DATABASE_URL", URL, "QUEUEBOX_DATABASE_USERNAME", "relay",
                "QUEUEBOX_BROKER_TYPE", "rabbitmq", "QUEUEBOX_OUTBOX_CAPTURE_ENABLED", "true",
                "QUEUEBOX_OUTBOX_CAPTURE_MODE", "postgres-logical"), "config", "check");

        assertThat(result.exitCode()).as(result.output()).isEqualTo(2);
        assertThat(result.output()).contains("outbox.capture.mode = 'postgres-logical'")
                .contains("database.url is SQL Server; allowed: polling, sqlserver-cdc");
    }

    @Test
    void migrateDryRunPrintsTheSqlServerSchemaWithoutConnecting() throws Exception {
        Result result = jar(Map.of("QUEUEBOX_DATABASE_URL", URL, "QUEUEBOX_BROKER_TYPE", "rabbitmq",
                "QUEUEBOX_OUTBOX_SCHEMA", "Sales", "QUEUEBOX_OUTBOX_TABLE", "OrderOutbox"), "migrate", "--dry-run");

        assertThat(result.exitCode()).as(result.output()).isZero();
        assertThat(result.output())
                .contains("-- QueueBox schema for SQL Server, Sales.OrderOutbox (classpath:db/queuebox/sqlserver)")
                .contains("CREATE TABLE [Sales].[OrderOutbox]")
                .contains("[Sales].[queuebox_capture_state]")
                .doesNotContain("${queuebox_");
    }

    @Test
    void theSqlServerSetupHowTosFileCopiedAsWrittenPassesConfigCheck() throws Exception {
        String howTo = Files.readString(Path.of("..", "docs", "how-to", "sqlserver-setup.md"));
        Matcher yaml = Pattern.compile("(?s)## 6\\. Configure QueueBox.*?```yaml\\n(.*?)```").matcher(howTo);
        assertThat(yaml.find()).as("the how-to's queuebox.yaml").isTrue();
        // The how-to's state directory as written; a fresh root for it keeps the check off this machine's /var/lib.
        Path file = Files.writeString(dir.resolve("queuebox.yaml"), yaml.group(1).replace("/var/lib/queuebox/capture",
                dir.resolve("var/lib/queuebox/capture").toString()));

        Result withSecrets = jar(Map.of("QUEUEBOX_DB_PASSWORD", "relay-secret", "QUEUEBOX_CAPTURE_PASSWORD",
                "capture-secret"), "config", "check", "--config", file.toString());
        Result withoutSecrets = jar(Map.of(), "config", "check", "--config", file.toString());

        assertThat(withSecrets.exitCode()).as(withSecrets.output()).isZero();
        assertThat(withSecrets.output()).contains("Database: SQL Server").doesNotContain("relay-secret")
                .doesNotContain("capture-secret");
        assertThat(withoutSecrets.exitCode()).as(withoutSecrets.output()).isEqualTo(2);
        assertThat(withoutSecrets.output()).contains("database.password").contains("QUEUEBOX_DB_PASSWORD");
    }

    private record Result(int exitCode, String output) {
    }

    private Result jar(Map<String, String> env, String... args) throws IOException, InterruptedException {
        assertThat(JAR).as("the shaded jar is built in package").exists();
        Path log = Files.createTempFile(dir, "jar", ".log");
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx256m", "-jar", JAR.toString()));
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile())
                .directory(dir.toFile());
        builder.environment().keySet().removeIf(name -> name.startsWith("QUEUEBOX_"));
        builder.environment().putAll(env);
        Process process = builder.start();
        boolean ended = process.waitFor(120, TimeUnit.SECONDS);
        if (!ended) {
            process.destroyForcibly();
        }
        String output = Files.readString(log, StandardCharsets.UTF_8);
        assertThat(ended).as("the jar ended: " + output).isTrue();
        return new Result(process.exitValue(), output);
    }
}
