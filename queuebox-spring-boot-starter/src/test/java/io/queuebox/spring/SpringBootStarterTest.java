package io.queuebox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import io.micrometer.core.instrument.MeterRegistry;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.spring.app.OrderService;
import io.queuebox.testkit.services.TestServices;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.actuate.health.HealthEndpoint;
import org.springframework.boot.actuate.health.Status;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * A real Spring Boot application (io.queuebox.spring.app) with the starter, on the real PostgreSQL (schema of its
 * own) and RabbitMQ. The poll interval is a minute, so an event that arrives within seconds was woken by the
 * after-commit hook.
 */
@SpringBootTest(classes = io.queuebox.spring.app.OrdersApplication.class)
class SpringBootStarterTest {

    private static final String SCHEMA = "qb_spring_" + UUID.randomUUID().toString().substring(0, 8);
    private static final String EXCHANGE = "qb_test_spring_" + UUID.randomUUID().toString().substring(0, 8);
    private static final String QUEUE = EXCHANGE + "_q";
    private static Connection rabbit;
    private static Channel channel;

    @Autowired
    OrderService orders;
    @Autowired
    JdbcTemplate jdbc;
    @Autowired
    HealthEndpoint health;
    @Autowired
    MeterRegistry meters;
    @Autowired
    QueueBoxRelay relay;

    @DynamicPropertySource
    static void services(DynamicPropertyRegistry registry) throws Exception {
        String url = TestServices.postgresUrl();
        try (java.sql.Connection c = DriverManager.getConnection(url); Statement st = c.createStatement()) {
            st.execute("CREATE SCHEMA " + SCHEMA);
            st.execute("CREATE TABLE " + SCHEMA + ".orders (id uuid PRIMARY KEY, customer text NOT NULL)");
        }
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(TestServices.rabbitMqUri());
        rabbit = factory.newConnection("queuebox-spring-test");
        channel = rabbit.createChannel();
        channel.exchangeDeclare(EXCHANGE, "topic", false, true, null);
        channel.queueDeclare(QUEUE, false, false, true, null);
        channel.queueBind(QUEUE, EXCHANGE, "#");

        registry.add("spring.datasource.url", () -> url + (url.contains("?") ? "&" : "?") + "currentSchema=" + SCHEMA);
        registry.add("spring.flyway.enabled", () -> "false");
        registry.add("queuebox.outbox.schema", () -> SCHEMA);
        registry.add("queuebox.outbox.poll-interval-ms", () -> "60000");
        registry.add("queuebox.broker.type", () -> "rabbitmq");
        registry.add("queuebox.broker.rabbitmq.uri", TestServices::rabbitMqUri);
        registry.add("queuebox.broker.rabbitmq.exchange", () -> EXCHANGE);
        registry.add("management.endpoint.health.show-details", () -> "always");
    }

    @AfterAll
    static void cleanUp() throws Exception {
        if (channel != null) {
            channel.queueDelete(QUEUE);
            channel.exchangeDelete(EXCHANGE);
            rabbit.close();
        }
        try (java.sql.Connection c = DriverManager.getConnection(TestServices.postgresUrl()); Statement st = c.createStatement()) {
            st.execute("DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE");
        }
    }

    @Test
    void eventsWrittenInTransactionalMethodsArriveAtTheBrokerWithoutWaitingForThePoll() throws Exception {
        List<String> sent = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            sent.add(orders.place("customer-" + i).eventId().toString());
        }

        List<String> received = new ArrayList<>();
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            received.addAll(drain());
            assertThat(received).containsAll(sent);
        });
        // The relay marks a row sent only after the broker has confirmed it, so a consumer can hold the message a
        // moment before the row and the meter say so: wait for them rather than read them once.
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            assertThat(jdbc.queryForObject("SELECT count(*) FROM " + SCHEMA + ".queuebox_outbox WHERE status = 'sent'",
                    Long.class)).isGreaterThanOrEqualTo(5);
            assertThat(meters.find("queuebox.delivered").counter()).isNotNull();
            assertThat(meters.find("queuebox.delivered").counter().count()).isGreaterThanOrEqualTo(5);
        });
    }

    @Test
    void aRolledBackMethodSendsNothing() throws Exception {
        long before = outboxRows();

        assertThatThrownBy(() -> orders.placeThenFail("declined")).hasMessage("payment declined");
        OutboxEvent control = orders.place("after-the-rollback");

        List<String> received = new ArrayList<>();
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            received.addAll(drain());
            assertThat(received).contains(control.eventId().toString());
        });
        assertThat(outboxRows()).isEqualTo(before + 1);
        assertThat(jdbc.queryForObject("SELECT count(*) FROM " + SCHEMA + ".orders WHERE customer = 'declined'",
                Long.class)).isZero();
    }

    @Test
    void anEventCommittedByAnInnerRequiresNewTransactionIsWokenThoughTheOuterOneRollsBack() throws Exception {
        // The after-commit wake-up belonged to the outer transaction, which rolled back: the inner one's event,
        // committed, waited for the minute's poll.
        java.util.concurrent.atomic.AtomicReference<OutboxEvent> audited = new java.util.concurrent.atomic.AtomicReference<>();

        assertThatThrownBy(() -> orders.placeAuditedThenFail("audited", audited::set)).hasMessage("payment declined");

        List<String> received = new ArrayList<>();
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            received.addAll(drain());
            assertThat(received).contains(audited.get().eventId().toString());
        });
    }

    @Test
    void writingOutsideATransactionIsRefused() {
        long before = outboxRows();

        assertThatThrownBy(() -> orders.placeWithoutTransaction("nobody"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("none is active")
                .hasMessageContaining("@Transactional");
        assertThat(outboxRows()).isEqualTo(before);
    }

    @Test
    void actuatorShowsOutboxUpAndTheAdvisoryCaptureComponent() {
        var outbox = health.healthForPath("outbox");
        var capture = health.healthForPath("outboxCapture");

        assertThat(outbox.getStatus()).isEqualTo(Status.UP);
        assertThat(capture.getStatus()).isEqualTo(Status.UP);
        assertThat(relay.isRunning()).isTrue();
    }

    private long outboxRows() {
        return jdbc.queryForObject("SELECT count(*) FROM " + SCHEMA + ".queuebox_outbox", Long.class);
    }

    private static List<String> drain() throws Exception {
        List<String> ids = new ArrayList<>();
        GetResponse response;
        while ((response = channel.basicGet(QUEUE, true)) != null) {
            ids.add(response.getProps().getMessageId());
        }
        return ids;
    }
}
