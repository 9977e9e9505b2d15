package io.queuebox.inbox.rabbitmq;

/** What {@link RabbitMqInboxConsumer} does with a message whose handler (or database transaction) failed. */
public enum OnFailure {
    /**
     * Put it back, in its place, and try again after the retry delay: the consumer closes its channel, which returns
     * the message and every later one it had received but not acknowledged to the queue in their order, and
     * consumes again after the delay. Later messages never overtake the failed one; a poison message is retried
     * until it succeeds (or until a quorum queue's delivery limit dead-letters it).
     */
    REQUEUE,
    /**
     * Reject it without requeueing: the broker dead-letters it to the queue's dead-letter exchange
     * ({@code x-dead-letter-exchange}), or drops it when the queue has none. Later messages go on.
     */
    DEAD_LETTER
}
