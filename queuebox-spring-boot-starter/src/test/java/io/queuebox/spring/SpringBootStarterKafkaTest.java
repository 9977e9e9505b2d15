package io.queuebox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.queuebox.kafka.KafkaMessagePublisher;
import io.queuebox.kafka.testing.InProcessKafka;
import io.queuebox.spring.app.OrderService;
import io.queuebox.testkit.services.TestServices;
import java.nio.charset.StandardCharsets;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The same Spring Boot application with {@code queuebox.broker.type: kafka}, on the in-process Kafka broker. */
@SpringBootTest(classes = io.queuebox.spring.app.OrdersApplication.class)
class SpringBootStarterKafkaTest {

    private static final String SCHEMA = "qb_spring_kafka_" + UUID.randomUUID().toString().substring(0, 8);
    private static final String TOPIC = "qb-spring-" + UUID.randomUUID().toString().substring(0, 8);

    @Autowired
    OrderService orders;

    @DynamicPropertySource
    static void services(DynamicPropertyRegistry registry) throws Exception {
        String url = TestServices.postgresUrl();
        try (java.sql.Connection c = DriverManager.getConnection(url); Statement st = c.createStatement()) {
            st.execute("CREATE SCHEMA " + SCHEMA);
            st.execute("CREATE TABLE " + SCHEMA + ".orders (id uuid PRIMARY KEY, customer text NOT NULL)");
        }
        String bootstrap = InProcessKafka.bootstrapServers();
        try (Admin admin = Admin.create(Map.<String, Object>of("bootstrap.servers", bootstrap))) {
            admin.createTopics(List.of(new NewTopic(TOPIC, 2, (short) 1))).all().get(30, TimeUnit.SECONDS);
        }
        registry.add("spring.datasource.url", () -> url + (url.contains("?") ? "&" : "?") + "currentSchema=" + SCHEMA);
        registry.add("spring.flyway.enabled", () -> "false");
        registry.add("queuebox.outbox.schema", () -> SCHEMA);
        registry.add("queuebox.outbox.poll-interval-ms", () -> "60000");
        registry.add("queuebox.broker.type", () -> "kafka");
        registry.add("queuebox.broker.kafka.bootstrap.servers", () -> bootstrap);
        registry.add("queuebox.broker.kafka.topic", () -> TOPIC);
    }

    @AfterAll
    static void dropSchema() throws Exception {
        try (java.sql.Connection c = DriverManager.getConnection(TestServices.postgresUrl()); Statement st = c.createStatement()) {
            st.execute("DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE");
        }
    }

    @Test
    void committedEventsArriveOnTheTopicAndARolledBackOneNever() {
        assertThatThrownBy(() -> orders.placeThenFail("declined")).hasMessage("payment declined");
        List<String> sent = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            sent.add(orders.place("kafka-" + i).eventId().toString());
        }

        List<String> received = new ArrayList<>();
        List<String> payloads = new ArrayList<>();
        try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(Map.<String, Object>of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, InProcessKafka.bootstrapServers(),
                ConsumerConfig.GROUP_ID_CONFIG, "qb-spring-" + UUID.randomUUID(),
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"), new StringDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(TOPIC));
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    received.add(new String(record.headers().lastHeader(KafkaMessagePublisher.HEADER_EVENT_ID).value(),
                            StandardCharsets.UTF_8));
                    payloads.add(new String(record.value(), StandardCharsets.UTF_8));
                }
                assertThat(received).containsAll(sent);
            });
        }
        assertThat(payloads).noneMatch(payload -> payload.contains("declined"));
    }
}
