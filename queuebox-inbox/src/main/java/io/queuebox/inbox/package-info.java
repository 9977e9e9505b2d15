/**
 * The consumer side of QueueBox: an inbox table that makes each event's business effect happen once per
 * consumer, in the consumer's own database transaction. {@link io.queuebox.inbox.JdbcInbox} is the entry type
 * (PostgreSQL and SQL Server, chosen by {@link io.queuebox.inbox.InboxDatabase});
 * {@code io.queuebox.inbox.kafka} and {@code io.queuebox.inbox.rabbitmq} hold the consumer loops for each broker,
 * which need that broker's client on the class path (an optional dependency of this module).
 *
 * <p>This package itself uses JDBC and the ports only, never a broker client.
 */
package io.queuebox.inbox;
