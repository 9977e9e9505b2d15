package io.queuebox.reliability;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import java.io.IOException;
import java.util.UUID;

/**
 * A consumer of the scenario's queue, bound to everything on the scenario's exchange. It acks after it
 * recorded a message and reconnects by itself after a broker outage (the queue and exchange are durable,
 * the relay's messages persistent).
 */
final class RabbitConsumer implements AutoCloseable {

    final String exchange;
    final String queue;
    private final Connection connection;
    private final Channel channel;

    RabbitConsumer(String uri, String name, Receipts receipts) throws Exception {
        exchange = "qb_rel_" + name;
        queue = "qb_rel_q_" + name;
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(uri);
        factory.setAutomaticRecoveryEnabled(true);
        factory.setTopologyRecoveryEnabled(true);
        factory.setNetworkRecoveryInterval(500);
        connection = factory.newConnection("queuebox-reliability-consumer");
        channel = connection.createChannel();
        channel.exchangeDeclare(exchange, "topic", true);
        channel.queueDelete(queue);
        channel.queueDeclare(queue, true, false, false, null);
        channel.queueBind(queue, exchange, "#");
        channel.basicQos(500);
        channel.basicConsume(queue, false, new DefaultConsumer(channel) {
            @Override
            public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body)
                    throws IOException {
                Object aggregate = properties.getHeaders() == null ? null : properties.getHeaders().get("aggregate-id");
                receipts.add(UUID.fromString(properties.getMessageId()), String.valueOf(aggregate),
                        envelope.isRedeliver());
                getChannel().basicAck(envelope.getDeliveryTag(), false);
            }
        });
    }

    @Override
    public void close() {
        try {
            channel.queueDelete(queue);
            channel.exchangeDelete(exchange);
            connection.close();
        } catch (Exception ignored) {
            // best effort: the broker may be gone
        }
    }
}
