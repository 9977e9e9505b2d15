package io.queuebox.testkit.inbox;

import io.queuebox.testkit.MutableClock;
import java.time.Duration;

/** The in-memory inbox passes the contract that the SQL inboxes pass. */
class InMemoryInboxTest extends InboxContract<InMemoryInbox.Transaction> {

    private final MutableClock clock = MutableClock.create();
    private InMemoryInbox inbox;

    @Override
    protected InMemoryInbox newInboxOnEmptyTable() {
        inbox = new InMemoryInbox(clock);
        return inbox;
    }

    @Override
    protected InMemoryInbox.Transaction begin() {
        return inbox.begin();
    }

    @Override
    protected void commit(InMemoryInbox.Transaction transaction) {
        transaction.commit();
    }

    @Override
    protected void rollback(InMemoryInbox.Transaction transaction) {
        transaction.rollback();
    }

    @Override
    protected void ageEveryEntry(Duration age) {
        clock.advance(age);
    }
}
