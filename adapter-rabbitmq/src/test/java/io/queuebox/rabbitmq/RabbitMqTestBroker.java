package io.queuebox.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.Delivery;
import io.queuebox.testkit.faults.TcpProxy;
import io.queuebox.testkit.publisher.ReceivedMessage;
import io.queuebox.testkit.services.TestServices;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;

/**
 * Topology of one test on the real broker: a topic exchange bound to a queue with {@code #}, an exchange
 * with no binding (its messages are unroutable), and a consumer recording what the queue receives.
 */
final class RabbitMqTestBroker implements AutoCloseable {

    final String uri = TestServices.rabbitMqUri();
    final String exchange;
    final String unboundExchange;
    final String queue;
    private final Connection connection;
    private final Channel channel;
    private final List<Delivery> received = new CopyOnWriteArrayList<>();

    RabbitMqTestBroker(String bindingKey) {
        this(bindingKey, false);
    }

    /**
     * A topology that survives a broker restart, as a production one does: transient exchanges and queues
     * vanish with {@code stop_app}, and until this consumer's connection recovery declares them again a
     * publisher that reconnected first is rightly told the exchange does not exist.
     */
    static RabbitMqTestBroker surviving(String bindingKey) {
        return new RabbitMqTestBroker(bindingKey, true);
    }

    private RabbitMqTestBroker(String bindingKey, boolean durable) {
        String name = "queuebox-test-" + UUID.randomUUID().toString().substring(0, 8);
        exchange = name;
        unboundExchange = name + ".unbound";
        queue = name;
        try {
            ConnectionFactory factory = new ConnectionFactory();
            factory.setUri(uri);
            connection = factory.newConnection("queuebox-test-consumer");
            channel = connection.createChannel();
            channel.exchangeDeclare(exchange, "topic", durable, false, null);
            channel.exchangeDeclare(unboundExchange, "topic", durable, false, null);
            channel.queueDeclare(queue, durable, false, false, null);
            channel.queueBind(queue, exchange, bindingKey);
            channel.basicConsume(queue, true, (tag, delivery) -> received.add(delivery), tag -> { });
        } catch (Exception e) {
            throw new IllegalStateException("cannot set up the test topology on " + uri, e);
        }
    }

    RabbitMqSettings.Builder settings() {
        return RabbitMqSettings.builder().uri(uri).exchange(exchange).set("connection.name", exchange);
    }

    /** A proxy in front of this broker, which a test can cut or slow down (close it after the publisher). */
    TcpProxy proxy() throws IOException {
        URI server = URI.create(uri);
        return new TcpProxy(server.getHost(), server.getPort() < 0 ? 5672 : server.getPort());
    }

    /** {@link #settings()} with the connection going through {@code proxy}. */
    RabbitMqSettings.Builder settingsThrough(TcpProxy proxy) {
        URI server = URI.create(uri);
        return settings().set("uri", uri.replace(server.getHost() + ":" + server.getPort(), "127.0.0.1:" + proxy.port()));
    }

    /** Waits until {@code count} messages arrived or the time is up; answers all received so far. */
    List<Delivery> awaitDeliveries(int count, Duration timeout) {
        try {
            Awaitility.await().atMost(timeout).pollInterval(Duration.ofMillis(20)).until(() -> received.size() >= count);
            // A short grace period catches messages beyond the expected count (there must be none).
            Awaitility.await().pollDelay(Duration.ofMillis(100)).until(() -> true);
        } catch (ConditionTimeoutException e) {
            // Answer what arrived: the caller's assertion shows the difference.
        }
        return List.copyOf(received);
    }

    List<ReceivedMessage> awaitReceived(int count, Duration timeout) {
        return awaitDeliveries(count, timeout).stream().map(RabbitMqTestBroker::toReceived).toList();
    }

    static ReceivedMessage toReceived(Delivery delivery) {
        AMQP.BasicProperties properties = delivery.getProperties();
        Map<String, String> headers = new HashMap<>();
        if (properties.getHeaders() != null) {
            properties.getHeaders().forEach((k, v) -> headers.put(k, String.valueOf(v)));
        }
        return new ReceivedMessage(UUID.fromString(properties.getMessageId()),
                headers.get(RabbitMqMessagePublisher.HEADER_AGGREGATE_ID), properties.getType(),
                headers.get(RabbitMqMessagePublisher.HEADER_AGGREGATE_TYPE), delivery.getBody(), headers);
    }

    @Override
    public void close() {
        try {
            channel.queueDelete(queue);
            channel.exchangeDelete(exchange);
            channel.exchangeDelete(unboundExchange);
            connection.close();
        } catch (Exception e) {
            connection.abort();
        }
    }
}
