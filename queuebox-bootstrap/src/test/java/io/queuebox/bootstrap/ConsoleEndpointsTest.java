package io.queuebox.bootstrap;

import static io.queuebox.bootstrap.console.ConsoleFixtures.MALICIOUS_PAYLOAD;
import static io.queuebox.bootstrap.console.ConsoleFixtures.anEventOf;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.zaxxer.hikari.HikariDataSource;
import io.queuebox.bootstrap.console.ConsoleClient;
import io.queuebox.bootstrap.console.ConsoleFixtures;
import io.queuebox.bootstrap.internal.Relay;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.embed.internal.Migrations;
import io.queuebox.embed.internal.Pools;
import io.queuebox.ports.OutboxEvent;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The console's JSON endpoints on a relay started in-process against the real PostgreSQL and RabbitMQ: reads, the
 * escaping of an untrusted payload, every refusal of a change, dry runs, and replays that the broker then delivers.
 * The tests run in order: the replays at the end change the parked rows the earlier ones read.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ConsoleEndpointsTest {

    static final String ADMIN_TOKEN = "admin-token-0123456789abcdef";
    private static final String PARKED = "status = 'parked'";

    private static TestDatabase database;
    private static RabbitQueue rabbit;
    private static Relay relay;
    private static ConsoleClient console;
    private static OutboxEvent poison;
    private static List<OutboxEvent> orderA;
    private static List<OutboxEvent> quota;

    @BeforeAll
    static void aRelayWithParkedEvents() throws Exception {
        database = TestDatabase.create("console");
        rabbit = new RabbitQueue();
        Map<String, String> values = consoleConfig(database, rabbit);
        // Every interface, so that a client on another address of this host can be shown the door.
        values.put("http.host", "0.0.0.0");
        QueueBoxConfig config = QueueBoxConfig.of(values);
        try (HikariDataSource pool = Pools.operator(config)) {
            Migrations.migrate(pool, config);
        }
        poison = anEventOf("invoice", "inv-1", "InvoiceIssued", MALICIOUS_PAYLOAD);
        orderA = List.of(anEventOf("order", "order-A", "OrderPlaced", "{\"n\":1}"),
                anEventOf("order", "order-A", "OrderPaid", "{\"n\":2}"));
        quota = List.of(anEventOf("order", "order-B", "OrderPlaced", "{\"n\":3}"),
                anEventOf("order", "order-C", "OrderPlaced", "{\"n\":4}"),
                anEventOf("order", "order-C", "OrderPaid", "{\"n\":5}"));
        ConsoleFixtures.write(database.url(), List.of(poison, orderA.get(0), orderA.get(1), quota.get(0), quota.get(1), quota.get(2)));
        ConsoleFixtures.park(database.url(), "unroutable: returned by RabbitMQ (312 NO_ROUTE)", List.of(poison));
        ConsoleFixtures.park(database.url(), "message too large", orderA);
        ConsoleFixtures.park(database.url(), "broker refused: Quota exceeded", quota);
        relay = Relay.start(config);
        console = new ConsoleClient("127.0.0.1", relay.httpPort());
    }

    static Map<String, String> consoleConfig(TestDatabase database, RabbitQueue rabbit) {
        Map<String, String> values = RelayTest.configFor(database.url(), rabbit);
        values.put("console.enabled", "true");
        values.put("console.adminToken", ADMIN_TOKEN);
        values.put("console.sampleIntervalMs", "1000");
        return values;
    }

    @AfterAll
    static void cleanUp() throws Exception {
        if (relay != null) {
            relay.close();
        }
        if (rabbit != null) {
            rabbit.close();
        }
        if (database != null) {
            database.close();
        }
    }

    @Test
    @Order(1)
    void readViewsAreOpenByDefaultAndCarryTheSecurityHeaders() throws Exception {
        HttpResponse<String> overview = console.get("/console/api/overview", null);
        HttpResponse<String> capture = console.get("/console/api/capture", null);
        HttpResponse<String> page = console.get("/console/", null);

        assertThat(overview.statusCode()).as(overview.body()).isEqualTo(200);
        assertThat(ConsoleClient.json(overview).at("/backlog/parked").asLong()).isEqualTo(6);
        assertThat(capture.statusCode()).isEqualTo(200);
        assertThat(ConsoleClient.json(capture).get("state").asText()).isEqualTo("DISABLED");
        assertThat(ConsoleClient.json(capture).get("owner").asText()).contains("capture does not run");
        assertThat(page.statusCode()).isEqualTo(200);
        assertThat(page.body()).contains("<script src=\"console.js\" defer></script>").doesNotContain("<script>");
        for (HttpResponse<String> response : List.of(overview, capture, page)) {
            assertThat(response.headers().firstValue("Content-Security-Policy")).get().asString().startsWith("default-src 'self'");
            assertThat(response.headers().firstValue("X-Content-Type-Options")).contains("nosniff");
            assertThat(response.headers().firstValue("X-Frame-Options")).contains("DENY");
        }
    }

    @Test
    @Order(2)
    void anUntrustedPayloadComesBackEscapedAndBoundedAndIntactOnceDecoded() throws Exception {
        HttpResponse<String> response = console.get("/console/api/parked?aggregateType=invoice", null);

        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        assertThat(response.headers().firstValue("Content-Type")).contains("application/json");
        assertThat(response.body()).doesNotContain("<script>").doesNotContain("<img");
        assertThat(response.body().toLowerCase()).contains("\\u003cscript\\u003e").contains("\\u003cimg src=x");
        JsonNode event = ConsoleClient.json(response).get("events").get(0);
        assertThat(event.get("payloadPreview").asText()).isEqualTo(MALICIOUS_PAYLOAD);
        assertThat(event.get("eventId").asText()).isEqualTo(poison.eventId().toString());
        assertThat(event.get("lastError").asText()).contains("NO_ROUTE");
        assertThat(event.get("attempts").asInt()).isEqualTo(3);
        assertThat(event.get("payloadTruncated").asBoolean()).isFalse();
    }

    @Test
    @Order(3)
    void theParkedListFiltersByAggregateAndErrorText() throws Exception {
        JsonNode byError = ConsoleClient.json(console.get("/console/api/parked?error=QUOTA", null));
        JsonNode byAggregate = ConsoleClient.json(console.get("/console/api/parked?aggregateType=order&aggregateId=order-A", null));
        JsonNode byType = ConsoleClient.json(console.get("/console/api/parked?aggregateType=order&limit=2", null));

        assertThat(byError.get("matched").asInt()).isEqualTo(3);
        assertThat(byAggregate.get("matched").asInt()).isEqualTo(2);
        assertThat(byType.get("matched").asInt()).isEqualTo(5);
        assertThat(byType.get("events")).hasSize(2);
        assertThat(console.get("/console/api/parked?limit=0", null).statusCode()).isEqualTo(400);
    }

    @Test
    @Order(4)
    void aChangeIsRefusedWithoutTheAdminTokenTheCsrfTokenOrTheSameOrigin() throws Exception {
        console.session();
        String body = "{\"scope\":\"event\",\"eventId\":\"" + poison.eventId() + "\"}";
        String origin = console.origin();
        String csrf = console.csrfToken();
        String cookie = console.csrfCookie();

        assertThat(console.post("/console/api/replay", body, null, origin, csrf, cookie).statusCode()).as("no token").isEqualTo(401);
        assertThat(console.post("/console/api/replay", body, "wrong-token-0123456789abcdef", origin, csrf, cookie).statusCode())
                .as("wrong token").isEqualTo(401);
        assertThat(console.post("/console/api/replay", body, ADMIN_TOKEN, origin, null, cookie).statusCode())
                .as("no CSRF header").isEqualTo(403);
        assertThat(console.post("/console/api/replay", body, ADMIN_TOKEN, origin, csrf, null).statusCode())
                .as("no CSRF cookie").isEqualTo(403);
        assertThat(console.post("/console/api/replay", body, ADMIN_TOKEN, origin, "0".repeat(48), cookie).statusCode())
                .as("wrong CSRF token").isEqualTo(403);
        assertThat(console.post("/console/api/replay", body, ADMIN_TOKEN, "http://evil.example", csrf, cookie).statusCode())
                .as("foreign Origin").isEqualTo(403);
        assertThat(console.post("/console/api/replay", body, ADMIN_TOKEN, null, csrf, cookie).statusCode())
                .as("neither Origin nor Sec-Fetch-Site").isEqualTo(403);
        assertThat(console.post("/console/api/replay/dry-run", body, null, origin, csrf, cookie).statusCode())
                .as("a dry run needs the token too").isEqualTo(401);
        HttpResponse<String> get = console.get("/console/api/replay", ADMIN_TOKEN);
        assertThat(get.statusCode()).as("changes are POST only").isEqualTo(405);
        assertThat(get.headers().firstValue("Allow")).contains("POST");

        assertThat(database.count("public.queuebox_outbox", PARKED)).isEqualTo(6);
    }

    @Test
    @Order(5)
    void aRequestFromAnotherAddressIsRefused() throws Exception {
        Optional<InetAddress> external = nonLoopbackAddress();
        org.junit.jupiter.api.Assumptions.assumeTrue(external.isPresent(), "this host has no non-loopback IPv4 address");
        ConsoleClient remote = new ConsoleClient(external.get().getHostAddress(), relay.httpPort());

        HttpResponse<String> refused = remote.get("/console/api/overview", null);

        assertThat(refused.statusCode()).as(refused.body()).isEqualTo(403);
        assertThat(refused.body()).contains("console.allowRemote");
        assertThat(remote.get("/health/live", null).statusCode()).as("health is not the console's").isEqualTo(200);
    }

    @Test
    @Order(6)
    void aDryRunCountsWhatAReplayWouldChangeAndChangesNothing() throws Exception {
        console.session();

        JsonNode filter = ConsoleClient.json(console.post("/console/api/replay/dry-run",
                "{\"scope\":\"filter\",\"error\":\"quota\"}", ADMIN_TOKEN));
        JsonNode aggregate = ConsoleClient.json(console.post("/console/api/replay/dry-run",
                "{\"scope\":\"aggregate\",\"aggregateType\":\"order\",\"aggregateId\":\"order-A\"}", ADMIN_TOKEN));
        JsonNode all = ConsoleClient.json(console.post("/console/api/replay/dry-run", "{\"scope\":\"filter\"}", ADMIN_TOKEN));
        HttpResponse<String> noScope = console.post("/console/api/replay/dry-run", "{}", ADMIN_TOKEN);

        assertThat(filter.get("count").asInt()).isEqualTo(3);
        assertThat(filter.get("changed").asBoolean()).isFalse();
        assertThat(aggregate.get("count").asInt()).isEqualTo(2);
        assertThat(all.get("count").asInt()).isEqualTo(6);
        assertThat(noScope.statusCode()).isEqualTo(400);
        assertThat(noScope.body()).contains("scope");
        assertThat(database.count("public.queuebox_outbox", PARKED)).isEqualTo(6);
    }

    @Test
    @Order(7)
    void replayingOneEventDeliversIt() throws Exception {
        console.session();

        HttpResponse<String> replay = console.post("/console/api/replay",
                "{\"scope\":\"event\",\"eventId\":\"" + poison.eventId() + "\"}", ADMIN_TOKEN);

        assertThat(replay.statusCode()).as(replay.body()).isEqualTo(200);
        assertThat(ConsoleClient.json(replay).get("replayed").asInt()).isEqualTo(1);
        await().atMost(Duration.ofSeconds(20)).untilAsserted(() ->
                assertThat(rabbit.drain()).contains(poison.eventId().toString()));
        assertThat(database.count("public.queuebox_outbox", PARKED)).isEqualTo(5);
    }

    @Test
    @Order(8)
    void replayingAnAggregateDeliversEachOfItsParkedEvents() throws Exception {
        console.session();

        HttpResponse<String> replay = console.post("/console/api/replay",
                "{\"scope\":\"aggregate\",\"aggregateType\":\"order\",\"aggregateId\":\"order-A\"}", ADMIN_TOKEN);

        assertThat(ConsoleClient.json(replay).get("replayed").asInt()).as(replay.body()).isEqualTo(2);
        await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(rabbit.drain())
                .containsAll(orderA.stream().map(e -> e.eventId().toString()).toList()));
        assertThat(database.count("public.queuebox_outbox", PARKED)).isEqualTo(3);
    }

    @Test
    @Order(9)
    void replayingAFilterDeliversEveryEventItMatches() throws Exception {
        console.session();

        HttpResponse<String> replay = console.post("/console/api/replay", "{\"scope\":\"filter\",\"error\":\"Quota\"}", ADMIN_TOKEN);

        assertThat(ConsoleClient.json(replay).get("replayed").asInt()).as(replay.body()).isEqualTo(3);
        await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(rabbit.drain())
                .containsAll(quota.stream().map(e -> e.eventId().toString()).toList()));
        assertThat(database.count("public.queuebox_outbox", PARKED)).isZero();
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(ConsoleClient.json(
                console.get("/console/api/overview", null)).get("points").size()).isPositive());
    }

    private static Optional<InetAddress> nonLoopbackAddress() throws Exception {
        for (NetworkInterface network : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            if (!network.isUp() || network.isLoopback()) {
                continue;
            }
            for (InetAddress address : Collections.list(network.getInetAddresses())) {
                if (address instanceof Inet4Address && !address.isLoopbackAddress()) {
                    return Optional.of(address);
                }
            }
        }
        return Optional.empty();
    }
}
