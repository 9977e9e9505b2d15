package io.queuebox.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The jar starts as an unprivileged user, as the image's {@code queuebox} user runs it. */
class QueueBoxJarNonRootIT {

    private static final Path JAR = Path.of("target", "queuebox.jar");

    @Test
    void theJarRunsAsAnUnprivilegedUser() throws Exception {
        assertThat(JAR).exists();
        List<String> command = new ArrayList<>();
        boolean root = "root".equals(ProcessHandle.current().info().user().orElse(""));
        if (root) {
            // nobody/nogroup: no home, no write access to the build tree, like the image's system user.
            command.addAll(List.of("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"));
        }
        command.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-jar", JAR.toAbsolutePath().toString(), "config", "check"));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().put("QUEUEBOX_DATABASE_URL", "jdbc:postgresql://127.0.0.1:5432/test");
        builder.environment().put("QUEUEBOX_BROKER_TYPE", "rabbitmq");
        builder.directory(Files.createTempDirectory("queuebox-nonroot").toFile());
        builder.directory().setReadable(true, false);
        builder.directory().setExecutable(true, false);
        Process process = builder.start();
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);

        assertThat(process.exitValue()).as(output).isZero();
        assertThat(output).contains("database.url");
        if (root) {
            assertThat(output).as("the effective user is not root").doesNotContain("Permission denied");
        }
    }
}
