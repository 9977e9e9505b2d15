package io.queuebox.ports;

import java.time.Duration;

/**
 * The consumer side of the outbox: what a consumer calls inside its own transaction so that each event's
 * business effect happens once, however often the broker delivers it.
 *
 * <p>{@code T} is the caller's transaction handle (a JDBC {@code Connection} for the SQL inboxes). Like
 * {@link OutboxWriter}, the inbox joins that transaction and never commits, rolls back or closes it: the
 * entry that says "this consumer processed this event" exists exactly when the caller's business change
 * commits, and vanishes with it on a rollback, so a redelivery after a crash processes the event again.
 *
 * <p>Acknowledge the message to the broker only after the commit. A crash between the commit and the
 * acknowledgement makes the broker deliver again, and the inbox then answers {@link InboxOutcome#DUPLICATE}.
 *
 * @param <T> the transaction handle type
 */
public interface Inbox<T> {

    /**
     * Records {@code key} in the caller's transaction and, only if no transaction recorded it before, runs
     * {@code handler} in the same transaction.
     *
     * <ul>
     *   <li>Recorded and committed before: answers {@link InboxOutcome#DUPLICATE} without running the
     *       handler.</li>
     *   <li>Recorded before in this same transaction: {@link InboxOutcome#DUPLICATE} as well.</li>
     *   <li>Being recorded by another transaction that has not finished: waits for it (a row lock, never a
     *       read followed by a write, so two consumers racing on one event cannot both run the handler), then
     *       answers {@link InboxOutcome#DUPLICATE} if it committed, or records the key and runs the handler if it
     *       rolled back.</li>
     *   <li>Otherwise records the key, runs the handler, answers {@link InboxOutcome#PROCESSED}.</li>
     * </ul>
     *
     * An exception of the handler is thrown as it is, after the key was recorded: the caller must roll the
     * transaction back (which forgets the key), never commit it. A database error is an unchecked exception
     * naming the inbox table.
     */
    InboxOutcome process(T transaction, InboxKey key, InboxHandler<T> handler) throws Exception;

    /**
     * Deletes, in the caller's transaction, at most {@code maxEntries} entries recorded at least {@code retention}
     * ago on the database clock, oldest first, skipping entries other transactions hold; answers how many it
     * deleted. Commit after each call and call again while it answers {@code maxEntries}, so that a large
     * backlog never becomes one long transaction.
     *
     * <p>An event redelivered after its entry was purged is processed again: keep {@code retention} longer
     * than the longest time the broker may redeliver (consumer lag, replays, dead-letter replays).
     *
     * @throws IllegalArgumentException if {@code retention} is negative or {@code maxEntries} is below 1
     */
    int purge(T transaction, Duration retention, int maxEntries);
}
