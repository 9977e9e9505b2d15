package io.queuebox.ports;

/**
 * The consumer's business logic for one event, run by {@link Inbox#process} inside the caller's transaction.
 * Write through {@code transaction} only: a write on another connection, an HTTP call or an e-mail is not
 * undone by a rollback and not deduplicated by the inbox.
 *
 * @param <T> the transaction handle type
 */
@FunctionalInterface
public interface InboxHandler<T> {

    void handle(T transaction) throws Exception;
}
