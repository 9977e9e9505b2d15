package io.queuebox.inbox.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.Envelope;
import io.queuebox.inbox.EventIds;
import io.queuebox.inbox.InboxConsumerListener;
import io.queuebox.inbox.JdbcInbox;
import io.queuebox.inbox.MissingEventIdException;
import io.queuebox.ports.InboxKey;
import io.queuebox.ports.InboxOutcome;
import java.io.IOException;
import java.time.Duration;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.sql.DataSource;

/**
 * Consumes a RabbitMQ queue into the inbox with manual acknowledgements: each message is processed in one database
 * transaction (the inbox entry and the handler's writes) and acknowledged only after that transaction committed.
 * A crash before the acknowledgement makes the broker deliver the message again, and the inbox answers it as a
 * duplicate (acknowledged, handler not run).
 *
 * <p>The event id is the AMQP {@code message-id} property, where QueueBox's RabbitMQ publisher puts it. A message
 * without one (or with one that is not a UUID) is rejected without requeueing (so dead-lettered if the queue has a
 * dead-letter exchange) and reported to {@link InboxConsumerListener#rejected}: requeueing it would only bring it
 * back.
 *
 * <p>Order: messages of one channel arrive and are handled one after another, in queue order. A failure is handled
 * as {@link OnFailure} says; with {@link OnFailure#REQUEUE} nothing overtakes the failed message. Per-aggregate
 * order across several consumers of one queue needs the queue to have a single active consumer
 * ({@code x-single-active-consumer}); competing consumers on one queue do not keep any order.
 *
 * <p>The AMQP connection is the caller's (with automatic recovery, the channel comes back with it); {@link #close()}
 * closes only this consumer's channel.
 */
public final class RabbitMqInboxConsumer implements AutoCloseable {

    private static final String PUBLISHER = "QueueBox's RabbitMQ publisher";
    /** The property QueueBox's RabbitMQ publisher puts the event id in. */
    public static final String EVENT_ID_PROPERTY = "message-id";

    private final String consumerName;
    private final JdbcInbox inbox;
    private final DataSource dataSource;
    private final Connection connection;
    private final String queue;
    private final RabbitMqInboxHandler handler;
    private final int prefetch;
    private final OnFailure onFailure;
    private final Duration retryDelay;
    private final InboxConsumerListener listener;
    private final ScheduledExecutorService restarts;
    private final Object lock = new Object();
    private Channel channel;
    private boolean closed;

    private RabbitMqInboxConsumer(Builder builder) {
        this.consumerName = builder.consumerName;
        this.inbox = builder.inbox;
        this.dataSource = builder.dataSource;
        this.connection = builder.connection;
        this.queue = builder.queue;
        this.handler = builder.handler;
        this.prefetch = builder.prefetch;
        this.onFailure = builder.onFailure;
        this.retryDelay = builder.retryDelay;
        this.listener = builder.listener;
        this.restarts = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread thread = new Thread(runnable, "queuebox-inbox-" + queue);
            thread.setDaemon(true);
            return thread;
        });
    }

    public static Builder builder(String consumerName, JdbcInbox inbox, DataSource dataSource, Connection connection,
            String queue) {
        return new Builder(consumerName, inbox, dataSource, connection, queue);
    }

    /**
     * Opens a channel and starts consuming.
     *
     * @throws IllegalStateException if it is consuming already, or closed
     */
    public void start() throws IOException {
        synchronized (lock) {
            if (closed) {
                throw new IllegalStateException("the inbox consumer of queue " + queue + " is closed");
            }
            if (channel != null && channel.isOpen()) {
                throw new IllegalStateException("the inbox consumer of queue " + queue + " is consuming already");
            }
            Channel opened = connection.createChannel();
            opened.basicQos(prefetch);
            channel = opened;
            opened.basicConsume(queue, false, "queuebox-inbox-" + consumerName, new InboxConsumer(opened));
        }
    }

    /** Stops consuming and closes the channel: messages received and not yet acknowledged go back to the queue. */
    @Override
    public void close() {
        restarts.shutdownNow();
        synchronized (lock) {
            closed = true;
            closeQuietly(channel);
            channel = null;
        }
    }

    private boolean current(Channel candidate) {
        synchronized (lock) {
            return !closed && channel == candidate && candidate.isOpen();
        }
    }

    private void handle(Channel from, Envelope envelope, AMQP.BasicProperties properties, byte[] body) throws IOException {
        if (!current(from)) {
            // Received before its channel was closed for a requeue: the close returned it to the queue already.
            return;
        }
        long tag = envelope.getDeliveryTag();
        String message = "queue " + queue + ", delivery tag " + tag;
        UUID eventId;
        try {
            eventId = EventIds.parse(properties.getMessageId(), EVENT_ID_PROPERTY + " property", "message on " + message,
                    PUBLISHER);
        } catch (MissingEventIdException e) {
            listener.rejected(message, e);
            from.basicReject(tag, false);
            return;
        }
        InboxKey key = new InboxKey(consumerName, eventId);
        Delivery delivery = new Delivery(envelope, properties, body);
        try {
            InboxOutcome outcome = inbox.processInNewTransaction(dataSource, key, tx -> handler.handle(tx, delivery));
            listener.handled(message, key, outcome);
        } catch (Exception e) {
            listener.failed(message, key, e);
            if (onFailure == OnFailure.DEAD_LETTER) {
                from.basicReject(tag, false);
            } else {
                requeueFrom(from);
            }
            return;
        }
        from.basicAck(tag, false);
    }

    /**
     * Closing the channel returns the failed message and every later unacknowledged one to the queue in order, which
     * a nack of the failed message alone would not (the later ones, already received, would be handled first).
     */
    private void requeueFrom(Channel failed) {
        synchronized (lock) {
            if (channel == failed) {
                channel = null;
            }
        }
        closeQuietly(failed);
        scheduleRestart();
    }

    private void scheduleRestart() {
        try {
            restarts.schedule(() -> {
                try {
                    start();
                } catch (IOException | RuntimeException e) {
                    if (!isClosed()) {
                        scheduleRestart();
                    }
                }
            }, retryDelay.toMillis(), TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // Closed meanwhile: nothing to restart.
        }
    }

    private boolean isClosed() {
        synchronized (lock) {
            return closed;
        }
    }

    private static void closeQuietly(Channel channel) {
        if (channel == null || !channel.isOpen()) {
            return;
        }
        try {
            channel.close();
        } catch (IOException | TimeoutException | RuntimeException e) {
            try {
                channel.abort();
            } catch (IOException | RuntimeException ignored) {
                // The channel is gone either way; the broker requeues what it had not acknowledged.
            }
        }
    }

    private final class InboxConsumer extends DefaultConsumer {
        InboxConsumer(Channel channel) {
            super(channel);
        }

        @Override
        public void handleDelivery(String consumerTag, Envelope envelope, AMQP.BasicProperties properties, byte[] body)
                throws IOException {
            handle(getChannel(), envelope, properties, body);
        }
    }

    /** Settings of the consumer, each checked when set, naming the setting. */
    public static final class Builder {
        private final String consumerName;
        private final JdbcInbox inbox;
        private final DataSource dataSource;
        private final Connection connection;
        private final String queue;
        private RabbitMqInboxHandler handler;
        private int prefetch = 50;
        private OnFailure onFailure = OnFailure.REQUEUE;
        private Duration retryDelay = Duration.ofSeconds(1);
        private InboxConsumerListener listener = InboxConsumerListener.NOOP;

        private Builder(String consumerName, JdbcInbox inbox, DataSource dataSource, Connection connection,
                String queue) {
            this.consumerName = InboxKey.requireConsumerName("consumerName", consumerName);
            this.inbox = Objects.requireNonNull(inbox, "inbox");
            this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
            this.connection = Objects.requireNonNull(connection, "connection");
            Objects.requireNonNull(queue, "queue");
            if (queue.isBlank()) {
                throw new IllegalArgumentException("queue: must not be blank");
            }
            this.queue = queue;
        }

        /** The business logic; required. */
        public Builder handler(RabbitMqInboxHandler value) {
            this.handler = Objects.requireNonNull(value, "handler");
            return this;
        }

        /** How many unacknowledged messages the broker sends ahead (basic.qos); default 50, 1 to 65535. */
        public Builder prefetch(int value) {
            if (value < 1 || value > 65535) {
                throw new IllegalArgumentException("prefetch: must be 1-65535, got: " + value);
            }
            this.prefetch = value;
            return this;
        }

        /** What a failed message becomes; default {@link OnFailure#REQUEUE}. */
        public Builder onFailure(OnFailure value) {
            this.onFailure = Objects.requireNonNull(value, "onFailure");
            return this;
        }

        /** With {@link OnFailure#REQUEUE}: how long the consumer waits before it consumes again; default 1 s. */
        public Builder retryDelay(Duration value) {
            Objects.requireNonNull(value, "retryDelay");
            if (value.isNegative()) {
                throw new IllegalArgumentException("retryDelay: must not be negative, got: " + value);
            }
            this.retryDelay = value;
            return this;
        }

        /** Told about every message; default {@link InboxConsumerListener#NOOP}. */
        public Builder listener(InboxConsumerListener value) {
            this.listener = Objects.requireNonNull(value, "listener");
            return this;
        }

        /** The consumer, not yet consuming: call {@link RabbitMqInboxConsumer#start()}. */
        public RabbitMqInboxConsumer build() {
            if (handler == null) {
                throw new IllegalStateException("handler: not set");
            }
            return new RabbitMqInboxConsumer(this);
        }
    }
}
