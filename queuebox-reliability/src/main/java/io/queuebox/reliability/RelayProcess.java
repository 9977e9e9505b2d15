package io.queuebox.reliability;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/** The runnable jar as an operator starts it: a JVM of its own, configured by a YAML file, logging to a file. */
final class RelayProcess implements AutoCloseable {

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    private final String name;
    private final Path log;
    private final int httpPort;
    private final Process process;

    private RelayProcess(String name, Path log, int httpPort, Process process) {
        this.name = name;
        this.log = log;
        this.httpPort = httpPort;
        this.process = process;
    }

    /** Runs {@code queuebox <args>} with {@code config} and waits for it to exit; answers its exit code and output. */
    static Result runCommand(Path jar, Path dir, String name, Map<String, String> config, String... args)
            throws IOException, InterruptedException {
        Path file = writeConfig(dir, name, config);
        Path out = dir.resolve(name + ".log");
        List<String> command = javaCommand(jar);
        command.addAll(List.of("--config", file.toString()));
        command.addAll(List.of(args));
        Process process = builder(command, out).start();
        if (!process.waitFor(3, TimeUnit.MINUTES)) {
            process.destroyForcibly();
            throw new IllegalStateException("queuebox " + String.join(" ", args) + " did not end within 3 minutes");
        }
        return new Result(process.exitValue(), Files.readString(out));
    }

    /** Starts {@code queuebox run} with {@code config} (the HTTP port is chosen here). */
    static RelayProcess start(Path jar, Path dir, String name, Map<String, String> config) throws IOException {
        int port = freePort();
        Map<String, String> withPort = new TreeMap<>(config);
        withPort.put("http.port", Integer.toString(port));
        withPort.put("http.host", "127.0.0.1");
        withPort.putIfAbsent("instance.name", name);
        Path file = writeConfig(dir, name, withPort);
        Path log = dir.resolve(name + ".log");
        List<String> command = javaCommand(jar);
        command.addAll(List.of("--config", file.toString(), "run"));
        ProcessBuilder builder = builder(command, log);
        builder.redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        return new RelayProcess(name, log, port, builder.start());
    }

    private static List<String> javaCommand(Path jar) {
        return new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-jar", jar.toString()));
    }

    private static ProcessBuilder builder(List<String> command, Path log) {
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        // Only the file configures the relay: nothing from the suite's own environment leaks in.
        builder.environment().keySet().removeIf(key -> key.startsWith("QUEUEBOX_"));
        return builder;
    }

    private static Path writeConfig(Path dir, String name, Map<String, String> config) throws IOException {
        StringBuilder yaml = new StringBuilder();
        new TreeMap<>(config).forEach((key, value) ->
                yaml.append(key).append(": \"").append(value.replace("\\", "\\\\").replace("\"", "\\\"")).append("\"\n"));
        Path file = dir.resolve(name + ".yaml");
        Files.writeString(file, yaml);
        return file;
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    String name() {
        return name;
    }

    Path log() {
        return log;
    }

    boolean alive() {
        return process.isAlive();
    }

    /** SIGKILL: no shutdown hook, no lease released, as a crash or an OOM killer does. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }

    /** SIGTERM and wait for the graceful stop. */
    void stop() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }

    /** The body of {@code /health/ready}, or the reason it could not be read. */
    String readiness() {
        return get("/health/ready");
    }

    /** The Prometheus text of {@code /metrics}. */
    String metrics() {
        return get("/metrics");
    }

    /** The value of a counter or gauge in {@code /metrics} (summed over its label sets), or -1. */
    double metric(String name) {
        double sum = -1;
        for (String line : metrics().split("\n")) {
            if (line.startsWith(name + " ") || line.startsWith(name + "{")) {
                sum = Math.max(sum, 0) + Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return sum;
    }

    private String get(String path) {
        try {
            HttpResponse<String> response = HTTP.send(HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + httpPort + path)).timeout(Duration.ofSeconds(3)).build(),
                    HttpResponse.BodyHandlers.ofString());
            return response.body();
        } catch (IOException e) {
            return "unreachable: " + e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        }
    }

    /** Waits until the HTTP endpoints answer (the relay is up and delivering). */
    void awaitStarted(Duration timeout) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException(name + " exited with " + process.exitValue() + ":\n" + tail());
            }
            if (!readiness().startsWith("unreachable")) {
                return;
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException(name + " did not start within " + timeout + ":\n" + tail());
    }

    /** The last lines of the relay's log. */
    String tail() throws IOException {
        List<String> lines = Files.readAllLines(log);
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            kill();
        }
    }

    record Result(int exitCode, String output) {
    }
}
