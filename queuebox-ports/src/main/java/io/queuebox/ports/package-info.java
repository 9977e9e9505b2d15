/**
 * The ports of QueueBox: the interfaces that the delivery engine drives and that adapters implement,
 * and the immutable records that cross them.
 *
 * <p>This package depends on the JDK only. Every interface here is an SPI that other people implement:
 * its Javadoc states the contract method by method, and the testkit's contract suites
 * ({@code OutboxStoreContract}, {@code MessagePublisherContract}, {@code InboxContract}) check it. {@link
 * io.queuebox.ports.Inbox} is the consumer side's port: what a consumer calls in its own transaction so that an
 * event's effect happens once.
 *
 * <p>Times that decide who may claim what (due times, lease expiry) are compared on the database
 * clock. The engine therefore hands the store <em>durations</em> (lease length, backoff delay), never
 * instants computed on the relay's own clock.
 */
package io.queuebox.ports;
