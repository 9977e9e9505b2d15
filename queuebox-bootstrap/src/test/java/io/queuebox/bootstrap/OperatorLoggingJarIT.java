package io.queuebox.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The jar as an operator starts it with a logback file of their own: that file decides the layout, whatever
 * log.format says. The database does not answer, so the relay logs its wait and exits 3 without a service.
 */
class OperatorLoggingJarIT {

    private static final Path JAR = Path.of("target", "queuebox.jar").toAbsolutePath();

    @TempDir
    Path dir;

    @Test
    void aLogbackFileGivenWithTheSystemPropertyWinsOverLogFormat() throws Exception {
        Path logback = Files.writeString(dir.resolve("logback.xml"), """
                <configuration>
                  <appender name="operator" class="ch.qos.logback.core.ConsoleAppender">
                    <target>System.err</target>
                    <encoder><pattern>OPERATOR %level %logger{0} - %msg%n</pattern></encoder>
                  </appender>
                  <root level="INFO"><appender-ref ref="operator"/></root>
                </configuration>
                """);

        String withFile = run(List.of("-Dlogback.configurationFile=" + logback));
        String withoutFile = run(List.of());

        assertThat(withFile).contains("OPERATOR INFO Relay - waiting for database").doesNotContain("\"level\"");
        assertThat(withoutFile).contains("\"level\":\"INFO\"").doesNotContain("OPERATOR");
    }

    private String run(List<String> jvmOptions) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(jvmOptions);
        command.addAll(List.of("-jar", JAR.toString(), "run"));
        Path log = Files.createTempFile(dir, "relay", ".log");
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        Map<String, String> env = builder.environment();
        env.keySet().removeIf(name -> name.startsWith("QUEUEBOX_") && !name.startsWith("QUEUEBOX_TEST_"));
        env.putAll(Map.of("QUEUEBOX_DATABASE_URL", "jdbc:postgresql://127.0.0.1:1/none",
                "QUEUEBOX_BROKER_TYPE", "rabbitmq",
                "QUEUEBOX_BROKER_RABBITMQ_URI", "amqp://guest:guest@127.0.0.1:1/%2F",
                "QUEUEBOX_BROKER_RABBITMQ_EXCHANGE", "none",
                "QUEUEBOX_LOG_FORMAT", "json",
                "QUEUEBOX_STARTUP_DATABASE_WAIT_MS", "500",
                "QUEUEBOX_DATABASE_POOL_CONNECTION_TIMEOUT_MS", "250",
                "QUEUEBOX_HTTP_PORT", "0"));
        Process process = builder.start();
        process.getOutputStream().close();
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        String output = Files.readString(log, StandardCharsets.UTF_8);
        assertThat(process.exitValue()).as(output).isEqualTo(3);
        return output;
    }
}
