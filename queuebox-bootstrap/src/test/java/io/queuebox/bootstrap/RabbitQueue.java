package io.queuebox.bootstrap;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import io.queuebox.testkit.services.TestServices;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/** A throw-away topic exchange with one queue bound to everything, on the real RabbitMQ. */
final class RabbitQueue implements AutoCloseable {

    final String uri;
    final String exchange;
    private final String queue;
    private final Connection connection;
    private final Channel channel;
    private final List<String> received = new ArrayList<>();

    RabbitQueue() throws Exception {
        uri = TestServices.rabbitMqUri();
        String suffix = UUID.randomUUID().toString().substring(0, 8);
        exchange = "qb_test_" + suffix;
        queue = "qb_test_q_" + suffix;
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(uri);
        connection = factory.newConnection("queuebox-bootstrap-test");
        channel = connection.createChannel();
        channel.exchangeDeclare(exchange, "topic", false, true, null);
        channel.queueDeclare(queue, false, false, true, null);
        channel.queueBind(queue, exchange, "#");
    }

    /** Message ids (or bodies when no id) received so far. */
    synchronized List<String> drain() throws Exception {
        GetResponse response;
        while ((response = channel.basicGet(queue, true)) != null) {
            String id = response.getProps().getMessageId();
            received.add(id != null ? id : new String(response.getBody(), java.nio.charset.StandardCharsets.UTF_8));
        }
        return List.copyOf(received);
    }

    @Override
    public void close() throws Exception {
        channel.queueDelete(queue);
        channel.exchangeDelete(exchange);
        connection.close();
    }
}
