package io.queuebox.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.embed.internal.Migrations;
import io.queuebox.embed.internal.Pools;
import io.queuebox.bootstrap.internal.Relay;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.testkit.faults.TcpProxy;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The network to the database goes silent without closing a socket (found by the fault-injection suite,
 * scenario database-network-cut): only timeouts can notice. The relay must report the database down within
 * its bounds, answer its readiness probe in time, and deliver on its own once the network is back.
 */
class DatabaseNetworkCutTest {

    private static TestDatabase database;
    private static RabbitQueue rabbit;

    @BeforeAll
    static void services() throws Exception {
        database = TestDatabase.create("netcut");
        rabbit = new RabbitQueue();
    }

    @AfterAll
    static void cleanUp() throws Exception {
        rabbit.close();
        database.close();
    }

    @Test
    void aSilentDatabaseIsReportedDownWithinTheTimeoutsAndDeliveryResumesAfterIt() throws Exception {
        try (TcpProxy proxy = databaseProxy()) {
            Map<String, String> values = RelayTest.configFor(urlThrough(proxy), rabbit);
            values.put("database.socketTimeoutMs", "2000");
            values.put("database.pool.connectionTimeoutMs", "2000");
            // A claim the relay gave up on may still reach the server when the network comes back (TCP
            // retransmits) and lease rows nobody will publish: the lease's expiry frees them.
            values.put("outbox.leaseMs", "3000");
            QueueBoxConfig config = QueueBoxConfig.of(values);
            try (HikariDataSource pool = Pools.operator(config)) {
                Migrations.migrate(pool, config);
            }
            HttpClient http = HttpClient.newHttpClient();
            try (Relay relay = Relay.start(config)) {
                List<OutboxEvent> before = database.writeEvents(3);
                await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(rabbit.drain())
                        .containsAll(ids(before)));

                proxy.cut();
                List<OutboxEvent> during = database.writeEvents(3); // directly, not through the proxy
                HttpRequest ready = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + relay.httpPort()
                        + "/health/ready")).timeout(Duration.ofSeconds(4)).build();
                // The probe answers in time, and says why.
                await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
                    HttpResponse<String> response = http.send(ready, HttpResponse.BodyHandlers.ofString());
                    assertThat(response.statusCode()).as(response.body()).isEqualTo(503);
                    assertThat(response.body()).containsPattern("\"database\"\\s*:\\s*\\{\\s*\"status\"\\s*:\\s*\"DOWN\"");
                });

                proxy.restore();
                await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(rabbit.drain())
                        .containsAll(ids(during)));
                await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(
                        http.send(ready, HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(200));
            }
        }
    }

    @Test
    void connectionsThatWentSilentForGoodAreGivenUpAndDeliveryGoesOnOnNewOnes() throws Exception {
        try (TcpProxy proxy = databaseProxy()) {
            Map<String, String> values = RelayTest.configFor(urlThrough(proxy), rabbit);
            values.put("database.socketTimeoutMs", "2000");
            QueueBoxConfig config = QueueBoxConfig.of(values);
            try (HikariDataSource pool = Pools.operator(config)) {
                Migrations.migrate(pool, config);
            }
            try (Relay relay = Relay.start(config)) {
                List<OutboxEvent> before = database.writeEvents(3);
                await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(rabbit.drain())
                        .containsAll(ids(before)));
                // The server behind the pool's connections is gone without a word; a new connection works.
                // Before the fix (no socket timeout) the workers waited on the old sockets for ever and these
                // events were never delivered.
                proxy.cutExisting();
                List<OutboxEvent> after = database.writeEvents(3);
                await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(rabbit.drain())
                        .containsAll(ids(after)));
            }
        }
    }

    private static TcpProxy databaseProxy() throws java.io.IOException {
        URI server = URI.create(database.url().substring("jdbc:".length()));
        return new TcpProxy(server.getHost(), server.getPort());
    }

    /** The database's URL with the proxy's address in place of the server's. */
    private static String urlThrough(TcpProxy proxy) {
        URI server = URI.create(database.url().substring("jdbc:".length()));
        return database.url().replace(server.getHost() + ":" + server.getPort(), "127.0.0.1:" + proxy.port());
    }

    private static List<String> ids(List<OutboxEvent> events) {
        return events.stream().map(event -> event.eventId().toString()).toList();
    }
}
