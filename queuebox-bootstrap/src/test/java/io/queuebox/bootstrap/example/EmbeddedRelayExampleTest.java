package io.queuebox.bootstrap.example;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import io.queuebox.testkit.services.TestServices;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The embedding example against real PostgreSQL and RabbitMQ: events written by the application arrive. */
class EmbeddedRelayExampleTest {

    @Test
    void theEmbeddedRelayDeliversWhatTheApplicationWrites() throws Exception {
        String server = TestServices.postgresUrl();
        String database = "qb_embed_" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
        try (var admin = DriverManager.getConnection(server); Statement st = admin.createStatement()) {
            st.execute("CREATE DATABASE " + database);
        }
        String jdbcUrl = server.replaceFirst("/[^/?]+(\\?|$)", "/" + database + "$1");
        String amqp = TestServices.rabbitMqUri();
        String exchange = "qb_embed_" + UUID.randomUUID().toString().substring(0, 8);
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(amqp);
        try (com.rabbitmq.client.Connection rabbit = factory.newConnection(); Channel channel = rabbit.createChannel()) {
            channel.exchangeDeclare(exchange, "topic", false, true, null);
            String queue = channel.queueDeclare().getQueue();
            channel.queueBind(queue, exchange, "#");

            List<UUID> written = new ArrayList<>();
            try (EmbeddedRelayExample.Application app = EmbeddedRelayExample.Application.start(jdbcUrl, amqp, exchange)) {
                for (int i = 0; i < 5; i++) {
                    written.add(app.placeOrder("customer-" + i, "10.0" + i));
                }
                List<String> received = new ArrayList<>();
                await().atMost(Duration.ofSeconds(20)).until(() -> {
                    GetResponse response;
                    while ((response = channel.basicGet(queue, true)) != null) {
                        received.add(response.getProps().getMessageId());
                    }
                    return received.size() >= written.size();
                });
                assertThat(received).containsExactlyInAnyOrderElementsOf(written.stream().map(UUID::toString).toList());
            }
            channel.exchangeDelete(exchange);
        } finally {
            try (var admin = DriverManager.getConnection(server); Statement st = admin.createStatement()) {
                st.execute("DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
            }
        }
    }
}
