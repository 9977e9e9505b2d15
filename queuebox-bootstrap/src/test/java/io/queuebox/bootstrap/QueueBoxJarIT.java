package io.queuebox.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.OutboxEvent;
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
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The shaded jar as operators run it: a separate JVM, configured by environment, against real PostgreSQL
 * and RabbitMQ; stopped with SIGTERM.
 */
class QueueBoxJarIT {

    private static final Path JAR = Path.of("target", "queuebox.jar");

    private static TestDatabase database;
    private static RabbitQueue rabbit;

    @BeforeAll
    static void services() throws Exception {
        assertThat(JAR).as("the shaded jar is built in package").exists();
        database = TestDatabase.create("jar");
        rabbit = new RabbitQueue();
    }

    @AfterAll
    static void cleanUp() throws Exception {
        if (rabbit != null) {
            rabbit.close();
        }
        if (database != null) {
            database.close();
        }
    }

    private static Process start(Path log, int httpPort, String... args) throws IOException {
        return start(log, httpPort, Map.of(), args);
    }

    private static Process start(Path log, int httpPort, Map<String, String> overrides, String... args) throws IOException {
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m", "-jar", JAR.toString()));
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        Map<String, String> env = builder.environment();
        env.keySet().removeIf(name -> name.startsWith("QUEUEBOX_") && !name.startsWith("QUEUEBOX_TEST_"));
        RelayTest.configFor(database.url(), rabbit).forEach((key, value) ->
                env.put(io.queuebox.embed.config.EnvNames.forKey(key), value));
        env.put("QUEUEBOX_HTTP_PORT", Integer.toString(httpPort));
        env.put("QUEUEBOX_LOG_FORMAT", "json");
        env.putAll(overrides);
        return builder.start();
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    @Test
    void migratesDeliversServesHealthAndMetricsAndExitsZeroOnSigterm() throws Exception {
        Path migrateLog = Files.createTempFile("queuebox-migrate", ".log");
        Process migrate = start(migrateLog, 0, "migrate");
        assertThat(migrate.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(migrate.exitValue()).as(Files.readString(migrateLog)).isZero();

        List<OutboxEvent> events = database.writeEvents(20);
        int port = freePort();
        Path runLog = Files.createTempFile("queuebox-run", ".log");
        Process relay = start(runLog, port, "run");
        try {
            HttpClient http = HttpClient.newHttpClient();
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() ->
                    assertThat(rabbit.drain()).as(Files.readString(runLog))
                            .containsAll(events.stream().map(e -> e.eventId().toString()).toList()));
            await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
                HttpResponse<String> ready = http.send(HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + port + "/health/ready")).build(), HttpResponse.BodyHandlers.ofString());
                assertThat(ready.statusCode()).isEqualTo(200);
                String metrics = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics")).build(),
                        HttpResponse.BodyHandlers.ofString()).body();
                assertThat(metrics).contains("queuebox_delivered_events_total 20.0");
            });

            relay.destroy(); // SIGTERM
            assertThat(relay.waitFor(30, TimeUnit.SECONDS)).as("stopped within the shutdown deadline").isTrue();
            String log = Files.readString(runLog);
            assertThat(relay.exitValue()).as(log).isZero();
            assertThat(log).contains("\"level\":\"INFO\"").contains("stopped");
        } finally {
            relay.destroyForcibly();
        }
        assertThat(database.count("public.queuebox_outbox", "lease_token IS NOT NULL")).isZero();
        assertThat(database.count("public.queuebox_outbox", "status = 'sent'")).isEqualTo(20);
    }


    @Test
    void anUnreachableDatabaseAtStartExits3AfterTheWait() throws Exception {
        Path log = Files.createTempFile("queuebox-unreachable", ".log");
        Process relay = start(log, 0, Map.of("QUEUEBOX_DATABASE_URL", "jdbc:postgresql://127.0.0.1:1/none",
                "QUEUEBOX_STARTUP_DATABASE_WAIT_MS", "1000", "QUEUEBOX_DATABASE_POOL_CONNECTION_TIMEOUT_MS", "250"), "run");

        assertThat(relay.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(relay.exitValue()).as(Files.readString(log)).isEqualTo(3);
        assertThat(Files.readString(log)).contains("startup.databaseWaitMs");
    }

    @Test
    void aBadConfigurationExits2ListingEveryProblem() throws Exception {
        Path log = Files.createTempFile("queuebox-badconfig", ".log");
        Process relay = start(log, 0, Map.of("QUEUEBOX_OUTBOX_BATCH_SIZE", "0", "QUEUEBOX_OUTBOX_ORDERING", "random"), "run");

        assertThat(relay.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(relay.exitValue()).isEqualTo(2);
        assertThat(Files.readString(log)).contains("2 configuration problem(s)").contains("outbox.batchSize")
                .contains("outbox.ordering");
    }
}
