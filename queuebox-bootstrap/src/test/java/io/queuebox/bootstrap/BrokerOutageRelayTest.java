package io.queuebox.bootstrap;

import io.queuebox.embed.QueueBox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.queuebox.domain.DeliverySettings;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxWriter;
import io.queuebox.postgres.PostgresOutbox;
import io.queuebox.postgres.PostgresOutboxSettings;
import io.queuebox.rabbitmq.RabbitMqMessagePublisher;
import io.queuebox.rabbitmq.RabbitMqSettings;
import io.queuebox.testkit.services.TestServices;
import java.nio.charset.StandardCharsets;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The relay under load while RabbitMQ is stopped ({@code rabbitmqctl stop_app}) and started again, on the
 * real PostgreSQL and RabbitMQ: an outage charges no attempt to the events it holds up (only those whose
 * confirm it cut off are in doubt), parks nothing, and delivery drains the backlog within seconds of the
 * broker's return instead of waiting out each row's backoff. Before NotAttempted, a 30 s outage left 500
 * rows with attempts > 0 and took 39 s to drain afterwards.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class BrokerOutageRelayTest {

    private static final Duration OUTAGE = Duration.ofSeconds(30);
    private static final int AGGREGATES = 50;
    private static final int BATCH = 100;

    private static TestDatabase database;

    @BeforeAll
    static void database() {
        assumeTrue(LocalRabbitMq.canStop(), "needs the local RabbitMQ and rabbitmqctl to stop and start it");
        database = TestDatabase.create("outage");
    }

    @AfterAll
    static void drop() {
        if (database != null) {
            database.close();
        }
    }

    @Test
    void anOutageChargesNoAttemptToWhatItHeldUpAndDeliveryResumesWithinSecondsOfTheBrokersReturn() throws Exception {
        String name = "qb_outage_" + UUID.randomUUID().toString().substring(0, 8);
        declareDurable(name);
        HikariConfig hikari = new HikariConfig();
        hikari.setJdbcUrl(database.url());
        hikari.setMaximumPoolSize(6);
        List<OutboxEvent> written = new CopyOnWriteArrayList<>();
        AtomicBoolean writing = new AtomicBoolean(true);
        try (HikariDataSource dataSource = new HikariDataSource(hikari);
             RabbitMqMessagePublisher publisher = RabbitMqMessagePublisher.create(RabbitMqSettings.fromMap(
                     Map.of("uri", TestServices.rabbitMqUri(), "exchange", name)))) {
            PostgresOutbox.createSchema(dataSource, PostgresOutboxSettings.defaults());
            QueueBox relay = QueueBox.builder().dataSource(dataSource).publisher(publisher)
                    .settings(DeliverySettings.builder().workers(2).batchSize(BATCH)
                            .wakeInterval(Duration.ofMillis(50)).build())
                    .start();
            Thread writer = new Thread(() -> writeUntilStopped(written, writing), "outage-test-writer");
            writer.start();
            long recoveredAt;
            try {
                await().atMost(Duration.ofSeconds(20)).until(() -> sent() >= 50);
                LocalRabbitMq.rabbitmqctl("stop_app");
                try {
                    Thread.sleep(OUTAGE.toMillis());
                } finally {
                    LocalRabbitMq.rabbitmqctl("start_app");
                    LocalRabbitMq.rabbitmqctl("await_startup");
                }
                recoveredAt = System.nanoTime();
                Thread.sleep(2_000);
                writing.set(false);
                writer.join(10_000);
                await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100))
                        .until(() -> sent() == written.size());
            } finally {
                writing.set(false);
                relay.stop(Duration.ofSeconds(10));
            }
            double drainSeconds = (System.nanoTime() - recoveredAt) / 1e9;
            long charged = database.count("public.queuebox_outbox", "attempts > 0");
            long heldUp = written.size();
            System.out.printf("outage %d s: %d events written, %d with attempts > 0, backlog drained %.1f s after"
                    + " the broker's return%n", OUTAGE.toSeconds(), heldUp, charged, drainSeconds);

            assertThat(database.count("public.queuebox_outbox", "status = 'parked'")).isZero();
            // Charging what the outage held up would charge the head of every aggregate (50 here, and 5,540 rows
            // in a 30 s outage at full load); only the few messages whose confirm the drop cut off are in doubt.
            assertThat(charged).as("rows charged an attempt: only those in flight when the broker went away")
                    .isLessThan(AGGREGATES / 2);
            assertThat(drainSeconds).as("seconds from the broker's return until every event was sent (2 s of"
                    + " them still writing)").isLessThan(10.0);
            assertFirstDeliveriesInWriteOrder(name, written);
        } finally {
            deleteDurable(name);
        }
    }

    private long sent() throws Exception {
        return database.count("public.queuebox_outbox", "status = 'sent'");
    }

    /** One event per transaction, every 20 ms, round-robin over the aggregates, for as long as asked. */
    private static void writeUntilStopped(List<OutboxEvent> written, AtomicBoolean writing) {
        OutboxWriter<java.sql.Connection> writer = PostgresOutbox.jdbcWriter(PostgresOutboxSettings.defaults());
        int n = 0;
        try (java.sql.Connection connection = DriverManager.getConnection(database.url())) {
            connection.setAutoCommit(false);
            while (writing.get()) {
                OutboxEvent event = new OutboxEvent(UUID.randomUUID(), "order", "order-" + (n % AGGREGATES),
                        "OrderPlaced", null, ("{\"n\":" + n + "}").getBytes(StandardCharsets.UTF_8), null, Map.of());
                writer.enqueue(connection, event);
                connection.commit();
                written.add(event);
                n++;
                Thread.sleep(20);
            }
        } catch (Exception e) {
            throw new IllegalStateException("the test's writer failed", e);
        }
    }

    private static void assertFirstDeliveriesInWriteOrder(String queue, List<OutboxEvent> written) throws Exception {
        Map<String, String> aggregateOf = new LinkedHashMap<>();
        Map<String, List<String>> expected = new LinkedHashMap<>();
        for (OutboxEvent event : written) {
            aggregateOf.put(event.eventId().toString(), event.aggregateId());
            expected.computeIfAbsent(event.aggregateId(), a -> new ArrayList<>()).add(event.eventId().toString());
        }
        Map<String, List<String>> firstDeliveries = new LinkedHashMap<>();
        Set<String> seen = new HashSet<>();
        try (Connection connection = LocalRabbitMq.factory().newConnection("queuebox-outage-test-consumer")) {
            Channel channel = connection.createChannel();
            GetResponse response;
            while ((response = channel.basicGet(queue, true)) != null) {
                String id = response.getProps().getMessageId();
                if (seen.add(id) && aggregateOf.containsKey(id)) {
                    firstDeliveries.computeIfAbsent(aggregateOf.get(id), a -> new ArrayList<>()).add(id);
                }
            }
        }
        assertThat(seen).as("every written event reached the queue at least once")
                .containsAll(aggregateOf.keySet());
        for (Map.Entry<String, List<String>> aggregate : expected.entrySet()) {
            assertThat(firstDeliveries.get(aggregate.getKey())).as("first deliveries of %s", aggregate.getKey())
                    .containsExactlyElementsOf(aggregate.getValue());
        }
    }

    private static void declareDurable(String name) throws Exception {
        try (Connection connection = LocalRabbitMq.factory().newConnection("queuebox-outage-test-setup")) {
            Channel channel = connection.createChannel();
            channel.exchangeDeclare(name, "topic", true);
            channel.queueDeclare(name, true, false, false, null);
            channel.queueBind(name, name, "#");
        }
    }

    private static void deleteDurable(String name) {
        try (Connection connection = LocalRabbitMq.factory().newConnection("queuebox-outage-test-cleanup")) {
            Channel channel = connection.createChannel();
            channel.queueDelete(name);
            channel.exchangeDelete(name);
        } catch (Exception e) {
            System.err.println("could not delete the test's queue and exchange " + name + ": " + e);
        }
    }
}
