package io.queuebox.bootstrap.example;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.queuebox.embed.QueueBox;
import io.queuebox.domain.DeliverySettings;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxWriter;
import io.queuebox.postgres.PostgresOutbox;
import io.queuebox.postgres.PostgresOutboxSettings;
import io.queuebox.rabbitmq.RabbitMqMessagePublisher;
import io.queuebox.rabbitmq.RabbitMqSettings;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.UUID;

/**
 * QueueBox embedded in an application, as docs/how-to/embed.md shows it: the application's own pool,
 * the outbox schema, a publisher, the relay started and stopped with the application, and a business
 * change written with its event in one transaction. Run it with a JDBC URL and an AMQP URI.
 */
public final class EmbeddedRelayExample {

    private EmbeddedRelayExample() {
    }

    public static void main(String[] args) throws Exception {
        String jdbcUrl = args.length > 0 ? args[0] : "jdbc:postgresql://127.0.0.1:5432/test?user=postgres";
        String amqpUri = args.length > 1 ? args[1] : "amqp://guest:guest@127.0.0.1:5672/%2F";
        String exchange = args.length > 2 ? args[2] : "orders";
        try (Application app = Application.start(jdbcUrl, amqpUri, exchange)) {
            app.placeOrder("customer-7", "99.00");
            Thread.sleep(2000);
        }
    }

    /** The application: its pool and the embedded relay, started and closed together. */
    public static final class Application implements AutoCloseable {
        private final HikariDataSource dataSource;
        private final RabbitMqMessagePublisher publisher;
        private final QueueBox relay;
        private final OutboxWriter<Connection> outbox = PostgresOutbox.jdbcWriter(PostgresOutboxSettings.defaults());

        private Application(HikariDataSource dataSource, RabbitMqMessagePublisher publisher, QueueBox relay) {
            this.dataSource = dataSource;
            this.publisher = publisher;
            this.relay = relay;
        }

        public static Application start(String jdbcUrl, String amqpUri, String exchange) throws Exception {
            HikariConfig pool = new HikariConfig();
            pool.setJdbcUrl(jdbcUrl);
            pool.setMaximumPoolSize(8);
            HikariDataSource dataSource = new HikariDataSource(pool);
            // In production the application's own Flyway runs the scripts at classpath:db/queuebox/postgres.
            PostgresOutbox.createSchema(dataSource, PostgresOutboxSettings.defaults());
            try (Connection c = dataSource.getConnection()) {
                c.createStatement().execute("CREATE TABLE IF NOT EXISTS orders (id uuid PRIMARY KEY,"
                        + " customer text NOT NULL, total numeric(10,2) NOT NULL)");
            }
            RabbitMqMessagePublisher publisher = RabbitMqMessagePublisher.create(
                    RabbitMqSettings.builder().uri(amqpUri).exchange(exchange).build());
            QueueBox relay = QueueBox.builder()
                    .dataSource(dataSource)
                    .publisher(publisher)
                    .settings(DeliverySettings.builder().owner("orders-service").workers(2)
                            .wakeInterval(Duration.ofMillis(200)).build())
                    .start();
            return new Application(dataSource, publisher, relay);
        }

        /** The business change and its event, in one transaction: both exist, or neither does. */
        public UUID placeOrder(String customer, String total) throws Exception {
            UUID orderId = UUID.randomUUID();
            try (Connection c = dataSource.getConnection()) {
                c.setAutoCommit(false);
                try (PreparedStatement insert = c.prepareStatement(
                        "INSERT INTO orders (id, customer, total) VALUES (?, ?, ?::numeric)")) {
                    insert.setObject(1, orderId);
                    insert.setString(2, customer);
                    insert.setString(3, total);
                    insert.executeUpdate();
                }
                String payload = "{\"orderId\":\"" + orderId + "\",\"customer\":\"" + customer + "\",\"total\":" + total + "}";
                OutboxEvent event = OutboxEvent.of("order", orderId.toString(), "OrderPlaced",
                        payload.getBytes(StandardCharsets.UTF_8));
                outbox.enqueue(c, event);
                c.commit();
                relay.wake(); // optional: deliver now rather than at the next poll
                return event.eventId();
            }
        }

        @Override
        public void close() {
            relay.close();     // stops claiming, finishes in-flight batches, releases leases
            publisher.close(); // the application owns the publisher and the pool
            dataSource.close();
        }
    }
}
