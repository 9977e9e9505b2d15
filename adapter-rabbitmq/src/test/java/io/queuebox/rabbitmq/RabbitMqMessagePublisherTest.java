package io.queuebox.rabbitmq;

import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.testkit.publisher.MessagePublisherContract;
import io.queuebox.testkit.publisher.ReceivedMessage;
import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;

/** The testkit's publisher contract against the real RabbitMQ broker. */
class RabbitMqMessagePublisherTest extends MessagePublisherContract {

    private static final Duration PUBLISH_TIMEOUT = Duration.ofSeconds(3);

    private RabbitMqTestBroker broker;

    @Override
    protected MessagePublisher newPublisher() {
        broker = new RabbitMqTestBroker("#");
        return RabbitMqMessagePublisher.create(broker.settings().build());
    }

    @AfterEach
    void removeTheTopology() {
        broker.close();
    }

    @Override
    protected MessagePublisher newPublisherForUnreachableBroker() {
        int closedPort;
        try (ServerSocket socket = new ServerSocket(0)) {
            closedPort = socket.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        return RabbitMqMessagePublisher.create(RabbitMqSettings.builder()
                .uri("amqp://guest:guest@127.0.0.1:" + closedPort + "/%2F")
                .set("confirm.timeout.ms", String.valueOf(PUBLISH_TIMEOUT.toMillis())).build());
    }

    @Override
    protected Duration publishTimeout() {
        return PUBLISH_TIMEOUT;
    }

    @Override
    protected OutboxEvent missingDestinationOf(OutboxEvent event) {
        return event.withDestination(broker.exchange + ".never-declared");
    }

    @Override
    protected List<ReceivedMessage> awaitReceived(int count, Duration timeout) {
        return broker.awaitReceived(count, timeout);
    }

    @Override
    protected OutboxEvent poisonOf(OutboxEvent event) {
        // An exchange without bindings: the broker returns the mandatory message as unroutable.
        return event.withDestination(broker.unboundExchange);
    }
}
