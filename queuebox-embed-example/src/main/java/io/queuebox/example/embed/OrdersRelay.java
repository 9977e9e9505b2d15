package io.queuebox.example.embed;

import io.micrometer.core.instrument.MeterRegistry;
import io.queuebox.domain.DeliverySettings;
import io.queuebox.embed.QueueBox;
import io.queuebox.kafka.KafkaMessagePublisher;
import io.queuebox.kafka.KafkaSettings;
import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.OutboxEvent;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import javax.sql.DataSource;

/**
 * The relay inside an application, on PostgreSQL and Kafka, as docs/how-to/embed.md shows it: this class
 * compiles against exactly the how-to's three dependencies, and the module's build checks what they bring.
 */
public final class OrdersRelay implements AutoCloseable {

    private final MessagePublisher publisher;
    private final QueueBox relay;

    public OrdersRelay(DataSource dataSource, String kafkaBootstrap, MeterRegistry meterRegistry) {
        publisher = KafkaMessagePublisher.create(KafkaSettings.builder().bootstrapServers(kafkaBootstrap).build());
        relay = QueueBox.builder()
                .dataSource(dataSource)              // yours; its URL chooses PostgreSQL
                .publisher(publisher)
                .settings(DeliverySettings.builder().owner("orders-service").build())   // the jar's defaults otherwise
                .meterRegistry(meterRegistry)
                .start();
    }

    /** The order's change and its event in one transaction, then a wake-up so it is delivered at once. */
    public void place(Connection connection, String orderId, byte[] json) throws SQLException {
        connection.setAutoCommit(false);
        try (var insert = connection.prepareStatement("INSERT INTO orders (id) VALUES (?)")) {
            insert.setString(1, orderId);
            insert.executeUpdate();
            relay.writeAndCommit(connection, List.of(OutboxEvent.of("order", orderId, "OrderPlaced", json)));
        } catch (SQLException | RuntimeException e) {
            connection.rollback();
            throw e;
        }
    }

    @Override
    public void close() {
        relay.close();
        publisher.close();
    }
}
