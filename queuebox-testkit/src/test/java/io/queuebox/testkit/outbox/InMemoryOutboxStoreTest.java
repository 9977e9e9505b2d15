package io.queuebox.testkit.outbox;

import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxStore;
import java.util.List;

class InMemoryOutboxStoreTest extends OutboxStoreContract {

    private InMemoryOutboxStore store;

    @Override
    protected OutboxStore newStoreOnEmptyOutbox() {
        store = InMemoryOutboxStore.create();
        return store;
    }

    @Override
    protected void writeCommitted(List<OutboxEvent> events) {
        store.enqueueAll(events);
    }

    @Override
    protected UncommittedWrite beginUncommittedWrite(OutboxEvent event) {
        InMemoryOutboxStore.Transaction transaction = store.begin();
        store.enqueue(transaction, event);
        return new UncommittedWrite() {
            @Override
            public void commit() {
                transaction.commit();
            }

            @Override
            public void rollback() {
                transaction.rollback();
            }
        };
    }
}
