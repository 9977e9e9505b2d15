package io.queuebox.bootstrap.console;

import static io.queuebox.bootstrap.console.ConsoleFixtures.anEventOf;
import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.queuebox.bootstrap.TestDatabase;
import io.queuebox.bootstrap.internal.Relay;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.embed.internal.Migrations;
import io.queuebox.embed.internal.Pools;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkedEvent;
import io.queuebox.postgres.PostgresOutbox;
import io.queuebox.postgres.PostgresOutboxSettings;
import io.queuebox.testkit.services.TestServices;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Adversarial review of the operator console (issue 16). Each test states a promise of docs/operations.md#console
 * or docs/reference/console-api.md and the attack that breaks it; each failed on the merge commit df6e52e.
 */
class ConsoleSecurityReviewTest {

    static final String ADMIN_TOKEN = "admin-token-0123456789abcdef";

    private static TestDatabase database;
    private static Relay relay;
    private static ConsoleClient console;

    @BeforeAll
    static void aRelayWithAConsoleAndParkedEvents() throws Exception {
        database = TestDatabase.create("console_review");
        Map<String, String> values = new HashMap<>();
        values.put("database.url", database.url());
        values.put("broker.type", "rabbitmq");
        values.put("broker.rabbitmq.uri", TestServices.rabbitMqUri());
        values.put("broker.rabbitmq.exchange", "amq.topic");
        values.put("outbox.pollIntervalMs", "50");
        values.put("http.port", "0");
        values.put("http.host", "127.0.0.1");
        values.put("metrics.backlogSampleIntervalMs", "1000");
        values.put("shutdown.deadlineMs", "5000");
        values.put("console.enabled", "true");
        values.put("console.adminToken", ADMIN_TOKEN);
        values.put("console.sampleIntervalMs", "1000");
        QueueBoxConfig config = QueueBoxConfig.of(values);
        try (HikariDataSource pool = Pools.operator(config)) {
            Migrations.migrate(pool, config);
        }
        // Two aggregates whose ids differ only by a leading space: "42" (two events) and " 42" (one).
        List<OutboxEvent> plain = List.of(anEventOf("order", "42", "OrderPlaced", "{\"n\":1}"),
                anEventOf("order", "42", "OrderPaid", "{\"n\":2}"));
        List<OutboxEvent> spaced = List.of(anEventOf("order", " 42", "OrderPlaced", "{\"n\":3}"));
        List<OutboxEvent> all = new ArrayList<>(plain);
        all.addAll(spaced);
        ConsoleFixtures.write(database.url(), all);
        ConsoleFixtures.park(database.url(), "message too large", all);
        relay = Relay.start(config);
        console = new ConsoleClient("127.0.0.1", relay.httpPort());
    }

    @AfterAll
    static void cleanUp() {
        if (relay != null) {
            relay.close();
        }
        if (database != null) {
            database.close();
        }
    }

    /**
     * Promise 2 (this host's clients only) against DNS rebinding. A page on http://rebind.attacker.example:PORT,
     * whose name the attacker re-points at 127.0.0.1, is same-origin with the console in the operator's browser
     * (on the relay host, or on a workstation with the SSH tunnel the docs recommend): its fetch() comes from a
     * loopback address and reads every parked payload. The console never checks Host, so it answers. A console
     * bound to this host must refuse a Host that is not a loopback name or address (403 or 421).
     */
    @Test
    void aForeignHostHeaderIsRefusedOnReadsAndOnTheSession_dnsRebinding() throws Exception {
        int port = relay.httpPort();
        String foreignHost = "rebind.attacker.example:" + port;
        for (String path : List.of("/console/api/parked", "/console/api/session", "/console/api/capture",
                "/console/api/overview")) {
            RawResponse response = raw(port, "GET " + path + " HTTP/1.1\r\nHost: " + foreignHost
                    + "\r\nSec-Fetch-Site: same-origin\r\nConnection: close\r\n\r\n");
            assertThat(response.status()).as(path + " with Host " + foreignHost + ":\n" + response.text())
                    .isIn(403, 421);
        }
    }

    /**
     * Promise 3/4: the Origin check of a change compares Origin with the request's own Host, which the rebinding
     * page controls; so the check accepts the attacker's origin. Only the admin token stands between a rebinding
     * page and a replay. The console should compare Origin against the names it is served under (loopback ones
     * unless allowRemote), not against whatever Host the client sent.
     */
    @Test
    void theSameOriginCheckOfAChangeDoesNotTrustTheClientsOwnHostHeader() {
        com.sun.net.httpserver.Headers headers = new com.sun.net.httpserver.Headers();
        headers.add("Host", "rebind.attacker.example:8080");
        headers.add("Origin", "http://rebind.attacker.example:8080");

        // A console served under the loopback names (the default), as the relay above.
        ConsoleAccess access = new ConsoleAccess(new ConsoleSettings(true, false, Optional.of(ADMIN_TOKEN), false,
                Optional.empty(), Duration.ofSeconds(1)));

        assertThat(access.sameOrigin(headers)).as("an attacker's origin, matched against the attacker's Host").isFalse();
    }

    /**
     * Promise 6 (a large payload cannot bloat a poll; request bounds). GET /console/api/parked?limit=1 shows one
     * event and 2 KiB of its payload, yet the console loads every parked row's whole payload, up to 1,000 rows, at
     * every poll (each open page polls every 3 s): with parked payloads of a few MiB (the rows parked for
     * outbox.maxPayloadBytes or a broker's "message too large" are exactly the large ones) one request holds GiBs
     * on the heap. Here 12 parked payloads of 1 MiB: a limit=1 list must not read 12 MiB of payload.
     */
    @Test
    void aParkedListReadsNoMorePayloadThanItShows() throws Exception {
        TestDatabase big = TestDatabase.create("console_review_big");
        HttpServer server = null;
        try {
            Map<String, String> values = Map.of("database.url", big.url(), "broker.type", "rabbitmq",
                    "broker.rabbitmq.uri", TestServices.rabbitMqUri(), "broker.rabbitmq.exchange", "amq.topic");
            QueueBoxConfig config = QueueBoxConfig.of(values);
            try (HikariDataSource pool = Pools.operator(config)) {
                Migrations.migrate(pool, config);
            }
            String mib = "x".repeat(1024 * 1024);
            List<OutboxEvent> events = new ArrayList<>();
            for (int i = 0; i < 12; i++) {
                events.add(anEventOf("blob", "b-" + i, "BlobStored", mib));
            }
            ConsoleFixtures.write(big.url(), events);
            ConsoleFixtures.park(big.url(), "payload is 1048576 bytes, more than outbox.maxPayloadBytes", events);

            PGSimpleDataSource dataSource = new PGSimpleDataSource();
            dataSource.setURL(big.url());
            OutboxStore real = PostgresOutbox.store(dataSource, PostgresOutboxSettings.defaults());
            AtomicLong payloadBytesLoaded = new AtomicLong();
            OutboxStore counting = (OutboxStore) Proxy.newProxyInstance(OutboxStore.class.getClassLoader(),
                    new Class<?>[] {OutboxStore.class}, (proxy, method, args) -> {
                        Object result;
                        try {
                            result = method.invoke(real, args);
                        } catch (InvocationTargetException e) {
                            throw e.getCause();
                        }
                        if (method.getName().equals("parked")) {
                            for (Object row : (List<?>) result) {
                                payloadBytesLoaded.addAndGet(((ParkedEvent) row).event().payload().length);
                            }
                        }
                        return result;
                    });
            ConsoleSettings settings = new ConsoleSettings(true, false, Optional.of(ADMIN_TOKEN), false,
                    Optional.empty(), Duration.ofSeconds(1));
            Console handler = new Console(settings, counting, ConsoleSeries.start(new SimpleMeterRegistry(),
                    Duration.ofSeconds(1)), () -> null);
            server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
            server.createContext(Console.PATH, handler);
            server.start();
            ConsoleClient client = new ConsoleClient("127.0.0.1", server.getAddress().getPort());

            HttpResponse<String> response = client.get("/console/api/parked?limit=1", null);

            assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
            assertThat(ConsoleClient.json(response).get("events")).hasSize(1);
            assertThat(payloadBytesLoaded.get())
                    .as("payload bytes read from the database to show one 2 KiB preview")
                    .isLessThanOrEqualTo(64L * 1024);
        } finally {
            if (server != null) {
                server.stop(0);
            }
            big.close();
        }
    }

    /**
     * Replay takes exactly what the operator chose. The page's "Replay aggregate" button sends the row's aggregate
     * type and id as they are; the console trims them, so the row of aggregate " 42" replays aggregate "42"
     * instead (another customer's, say) and never the one that was chosen. Here the dry run of " 42" counts the
     * two events of "42" instead of its own one.
     */
    @Test
    void aReplayOfAnAggregateTakesThatAggregateNotOneWhoseIdMerelyTrimsTheSame() throws Exception {
        console.session();
        HttpResponse<String> dryRun = console.post("/console/api/replay/dry-run",
                "{\"scope\":\"aggregate\",\"aggregateType\":\"order\",\"aggregateId\":\" 42\"}", ADMIN_TOKEN);

        assertThat(dryRun.statusCode()).as(dryRun.body()).isEqualTo(200);
        assertThat(ConsoleClient.json(dryRun).get("count").asInt()).as(dryRun.body()).isEqualTo(1);
    }

    /**
     * Denial of service of the whole HTTP port (health, metrics and console share two handler threads). A client
     * that sends the first bytes of a request and stops holds a handler thread for as long as it likes: the JDK
     * server reads the request head on the executor, with no time limit set. Two such connections and
     * /health/live no longer answers, so an orchestrator restarts the relay; with http.host 0.0.0.0 (the
     * default) anyone who reaches the port can do it. The console makes this worse only by sharing the pool.
     */
    @Test
    void twoStalledRequestsDoNotStopTheHealthEndpointFromAnswering() throws Exception {
        int port = relay.httpPort();
        List<Socket> stalled = new ArrayList<>();
        try {
            for (int i = 0; i < 2; i++) {
                Socket socket = new Socket("127.0.0.1", port);
                socket.getOutputStream().write("GET /console/api/overview HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        .getBytes(StandardCharsets.US_ASCII));
                socket.getOutputStream().flush();
                stalled.add(socket);
            }
            Thread.sleep(500);
            HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
            int status;
            try {
                status = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/health/live"))
                        .timeout(Duration.ofSeconds(5)).GET().build(), HttpResponse.BodyHandlers.ofString()).statusCode();
            } catch (java.net.http.HttpTimeoutException e) {
                status = -1;
            }
            assertThat(status).as("/health/live while two clients stall their request heads (-1: no answer in 5 s)")
                    .isEqualTo(200);
        } finally {
            for (Socket socket : stalled) {
                socket.close();
            }
        }
    }

    /**
     * Promise 7 (secrets are masked where the configuration is shown). A token under a misspelt key, one letter
     * off ("console.adminTokn"), or in the wrong case ("console.admintoken"), is an unknown key: the problem that
     * `config check` and the relay's start print shows its value in the clear next to "did you mean
     * console.adminToken?". The operator meant a secret; the masking only knows the exact key names.
     */
    @Test
    void aTokenUnderAMisspeltKeyIsNotPrintedByTheConfigurationCheck() {
        String secret = "s3cr3t-console-token-0123456789";
        for (String misspelt : List.of("console.adminTokn", "console.admintoken", "console.readTokn")) {
            Map<String, String> values = new HashMap<>();
            values.put("database.url", "jdbc:postgresql://127.0.0.1:5432/test");
            values.put("broker.type", "rabbitmq");
            values.put("console.enabled", "true");
            values.put(misspelt, secret);

            Throwable thrown = org.assertj.core.api.Assertions.catchThrowable(() -> new io.queuebox.embed.config.ConfigLoader()
                    .withoutFile().values(values).environment(Map.of()).load());

            assertThat(thrown).as(misspelt).isInstanceOf(io.queuebox.embed.config.ConfigException.class);
            assertThat(thrown.getMessage()).as(misspelt).contains(misspelt).doesNotContain(secret);
        }
    }

    private record RawResponse(int status, String text) {
    }

    /** One request written as given (a browser's Host, which java.net.http will not let a caller set). */
    private static RawResponse raw(int port, String request) throws Exception {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(10_000);
            OutputStream out = socket.getOutputStream();
            out.write(request.getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            InputStream in = socket.getInputStream();
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            in.transferTo(bytes);
            String text = bytes.toString(StandardCharsets.ISO_8859_1);
            int status = Integer.parseInt(text.substring(9, 12));
            return new RawResponse(status, text);
        }
    }
}
