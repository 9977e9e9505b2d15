package io.queuebox.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.zaxxer.hikari.HikariDataSource;
import io.queuebox.bootstrap.console.ConsoleClient;
import io.queuebox.bootstrap.internal.Relay;
import io.queuebox.embed.config.ConfigException;
import io.queuebox.embed.config.ConfigLoader;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.embed.internal.Migrations;
import io.queuebox.embed.internal.Pools;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The console's modes on a real relay: off (the default), read views behind a token, read-only without an admin
 * token; and the configuration rules of its keys.
 */
class ConsoleModesTest {

    private static final String READ_TOKEN = "read-token-0123456789abcdef";

    private static TestDatabase database;
    private static RabbitQueue rabbit;

    @BeforeAll
    static void services() throws Exception {
        database = TestDatabase.create("console_modes");
        rabbit = new RabbitQueue();
        QueueBoxConfig config = QueueBoxConfig.of(RelayTest.configFor(database.url(), rabbit));
        try (HikariDataSource pool = Pools.operator(config)) {
            Migrations.migrate(pool, config);
        }
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

    @Test
    void offByDefaultEveryConsolePathAnswers404AndNothingMoreListens() throws Exception {
        Map<String, String> values = RelayTest.configFor(database.url(), rabbit);
        assertThat(values).doesNotContainKey("console.enabled");
        awaitNoConsoleThread();
        Set<Long> before = listeningSocketsOfThisProcess();

        try (Relay relay = Relay.start(QueueBoxConfig.of(values))) {
            ConsoleClient console = new ConsoleClient("127.0.0.1", relay.httpPort());
            for (String path : List.of("/console", "/console/", "/console/console.js", "/console/api/session",
                    "/console/api/overview", "/console/api/parked", "/console/api/capture")) {
                assertThat(console.get(path, null).statusCode()).as(path).isEqualTo(404);
            }
            HttpResponse<String> replay = console.post("/console/api/replay", "{\"scope\":\"filter\"}",
                    ConsoleEndpointsTest.ADMIN_TOKEN, console.origin(), "x", "queuebox_csrf=x");
            assertThat(replay.statusCode()).isEqualTo(404);
            assertThat(console.get("/health/live", null).statusCode()).isEqualTo(200);

            assertThat(consoleThreads()).as("no console sampler runs").isEmpty();
            if (Files.isReadable(Path.of("/proc/self/net/tcp"))) {
                Set<Long> added = new HashSet<>(listeningSocketsOfThisProcess());
                added.removeAll(before);
                assertThat(added).as("the relay listens on its HTTP port only").hasSize(1);
            }
        }
    }

    @Test
    void enabledTheConsoleSharesTheHttpPortAndListensOnNothingElse() throws Exception {
        Map<String, String> values = ConsoleEndpointsTest.consoleConfig(database, rabbit);
        Set<Long> before = listeningSocketsOfThisProcess();

        try (Relay relay = Relay.start(QueueBoxConfig.of(values))) {
            ConsoleClient console = new ConsoleClient("127.0.0.1", relay.httpPort());
            assertThat(console.get("/console/api/overview", null).statusCode()).isEqualTo(200);
            if (Files.isReadable(Path.of("/proc/self/net/tcp"))) {
                Set<Long> added = new HashSet<>(listeningSocketsOfThisProcess());
                added.removeAll(before);
                assertThat(added).as("the console adds no listener").hasSize(1);
            }
        }
    }

    @Test
    void readViewsCanRequireATokenAndWithoutAnAdminTokenTheConsoleIsReadOnly() throws Exception {
        Map<String, String> values = RelayTest.configFor(database.url(), rabbit);
        values.put("console.enabled", "true");
        values.put("console.readRequiresToken", "true");
        values.put("console.readToken", READ_TOKEN);

        try (Relay relay = Relay.start(QueueBoxConfig.of(values))) {
            ConsoleClient console = new ConsoleClient("127.0.0.1", relay.httpPort());
            assertThat(console.get("/console/api/overview", null).statusCode()).isEqualTo(401);
            assertThat(console.get("/console/api/parked", "wrong-token-0123456789").statusCode()).isEqualTo(401);
            assertThat(console.get("/console/api/parked", READ_TOKEN).statusCode()).isEqualTo(200);
            assertThat(console.get("/console/api/capture", READ_TOKEN).statusCode()).isEqualTo(200);
            assertThat(console.get("/console/", null).statusCode()).as("the page holds no data").isEqualTo(200);

            assertThat(console.session().get("replayEnabled").asBoolean()).isFalse();
            HttpResponse<String> replay = console.post("/console/api/replay", "{\"scope\":\"filter\"}", READ_TOKEN);
            assertThat(replay.statusCode()).isEqualTo(403);
            assertThat(replay.body()).contains("console.adminToken");
        }
    }

    @Test
    void theCaptureViewNamesAFaultInWordsWithTheRecoveryStepOfTheHowTo(@TempDir Path stateDirectory) throws Exception {
        String slot = "qb_slot_" + UUID.randomUUID().toString().substring(0, 8);
        Map<String, String> values = ConsoleEndpointsTest.consoleConfig(database, rabbit);
        values.put("outbox.capture.enabled", "true");
        values.put("outbox.capture.mode", "postgres-logical");
        values.put("outbox.capture.slot", slot);
        values.put("outbox.capture.stateDirectory", stateDirectory.toString());
        // No publication: capture faults with SOURCE_NOT_READY before any connector (or slot) exists.
        try (Relay relay = Relay.start(QueueBoxConfig.of(values))) {
            ConsoleClient console = new ConsoleClient("127.0.0.1", relay.httpPort());

            JsonNode capture = await().atMost(Duration.ofSeconds(20)).until(
                    () -> ConsoleClient.json(console.get("/console/api/capture", null)),
                    json -> json.get("state").asText().equals("FAULT"));

            assertThat(capture.get("mode").asText()).isEqualTo("postgres-logical");
            assertThat(capture.get("fault").asText()).isEqualTo("SOURCE_NOT_READY");
            assertThat(capture.get("faultInWords").asText()).contains("not set up for capture");
            assertThat(capture.get("recovery").asText()).contains("Do what the message says");
            assertThat(capture.get("howTo").asText()).contains("capture-changes.md");
            assertThat(capture.get("message").asText()).containsIgnoringCase("publication");
            assertThat(capture.get("owner").asText()).startsWith("none");
            assertThat(capture.get("slot").asText()).isEqualTo(slot);
            assertThat(capture.get("healthy").asBoolean()).isFalse();
        } finally {
            database.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '"
                    + slot + "'");
        }
    }

    @Test
    void aShortTokenOrAMissingReadTokenIsAConfigurationErrorNamingTheKey() {
        Map<String, String> shortToken = minimalConfig();
        shortToken.put("console.enabled", "true");
        shortToken.put("console.adminToken", "tooshort");
        Map<String, String> noReadToken = minimalConfig();
        noReadToken.put("console.enabled", "true");
        noReadToken.put("console.readRequiresToken", "true");

        assertThatThrownBy(() -> load(shortToken)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("console.adminToken").hasMessageContaining("at least 16")
                .hasMessageNotContaining("tooshort");
        assertThatThrownBy(() -> load(noReadToken)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("console.readToken");
    }

    @Test
    void theTokensAreMaskedWhereTheConfigurationIsShown() {
        Map<String, String> values = minimalConfig();
        values.put("console.enabled", "true");
        values.put("console.adminToken", ConsoleEndpointsTest.ADMIN_TOKEN);
        values.put("console.readToken", READ_TOKEN);

        QueueBoxConfig config = load(values);

        assertThat(String.join("\n", config.describe())).contains("console.adminToken").contains("console.readToken")
                .doesNotContain(ConsoleEndpointsTest.ADMIN_TOKEN).doesNotContain(READ_TOKEN);
        assertThat(config.toString()).doesNotContain(ConsoleEndpointsTest.ADMIN_TOKEN);
        assertThat(io.queuebox.bootstrap.console.ConsoleSettings.from(config).toString())
                .doesNotContain(ConsoleEndpointsTest.ADMIN_TOKEN).doesNotContain(READ_TOKEN);
    }

    private static Map<String, String> minimalConfig() {
        Map<String, String> values = new HashMap<>();
        values.put("database.url", "jdbc:postgresql://127.0.0.1:5432/test");
        values.put("broker.type", "rabbitmq");
        return values;
    }

    private static QueueBoxConfig load(Map<String, String> values) {
        return new ConfigLoader().withoutFile().values(values).environment(Map.of()).load();
    }

    private static List<String> consoleThreads() {
        return Thread.getAllStackTraces().keySet().stream().map(Thread::getName)
                .filter(name -> name.startsWith("queuebox-console")).toList();
    }

    private static void awaitNoConsoleThread() {
        await().atMost(Duration.ofSeconds(10)).until(() -> consoleThreads().isEmpty());
    }

    private static final Pattern SOCKET = Pattern.compile("socket:\\[(\\d+)]");

    /**
     * The inodes of the TCP sockets this JVM listens on (Linux /proc); empty elsewhere, where the assertions that
     * use it are skipped.
     */
    static Set<Long> listeningSocketsOfThisProcess() throws Exception {
        Set<Long> listening = new HashSet<>();
        for (String table : List.of("/proc/self/net/tcp", "/proc/self/net/tcp6")) {
            Path path = Path.of(table);
            if (!Files.isReadable(path)) {
                continue;
            }
            // Read once: the table changes between two reads (other sockets of this JVM open and close).
            List<String> lines = Files.readAllLines(path);
            for (String line : lines.subList(Math.min(1, lines.size()), lines.size())) {
                String[] fields = line.trim().split("\\s+");
                if (fields.length > 9 && fields[3].equals("0A")) {
                    listening.add(Long.parseLong(fields[9]));
                }
            }
        }
        Set<Long> mine = new HashSet<>();
        Path fds = Path.of("/proc/self/fd");
        if (!Files.isDirectory(fds)) {
            return mine;
        }
        try (var stream = Files.list(fds)) {
            for (Path fd : stream.toList()) {
                try {
                    Matcher socket = SOCKET.matcher(Files.readSymbolicLink(fd).toString());
                    if (socket.matches() && listening.contains(Long.parseLong(socket.group(1)))) {
                        mine.add(Long.parseLong(socket.group(1)));
                    }
                } catch (java.io.IOException gone) {
                    // The descriptor closed while we listed them.
                }
            }
        }
        return mine;
    }
}
