package io.queuebox.rabbitmq;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs {@code rabbitmqctl} against the local broker, for tests that take it away (an outage, a resource
 * alarm). Callers restore the broker in a {@code finally}: the broker is shared with other tests and builds.
 */
final class RabbitMqCtl {

    private RabbitMqCtl() {
    }

    /** Runs {@code rabbitmqctl args...}; fails with the tool's output unless it exits 0 within 60 s. */
    static String run(String... args) {
        List<String> command = new ArrayList<>(List.of("rabbitmqctl"));
        command.addAll(List.of(args));
        try {
            // Input and output are files, so nothing of the tool can reach the test JVM's own streams.
            File log = File.createTempFile("rabbitmqctl-", ".log");
            log.deleteOnExit();
            Process process = new ProcessBuilder(command)
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                    .redirectOutput(log).redirectErrorStream(true).start();
            boolean finished = process.waitFor(60, TimeUnit.SECONDS);
            if (!finished) {
                process.destroyForcibly();
            }
            String output = Files.readString(log.toPath());
            if (!finished || process.exitValue() != 0) {
                throw new IllegalStateException(command + " failed: " + output);
            }
            return output;
        } catch (IOException e) {
            throw new IllegalStateException("cannot run " + command, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted running " + command, e);
        }
    }
}
