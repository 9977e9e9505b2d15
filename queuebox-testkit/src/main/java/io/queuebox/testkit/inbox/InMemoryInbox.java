package io.queuebox.testkit.inbox;

import io.queuebox.ports.Inbox;
import io.queuebox.ports.InboxHandler;
import io.queuebox.ports.InboxKey;
import io.queuebox.ports.InboxOutcome;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * An {@link Inbox} in memory with transactions of its own, which behaves like the SQL inboxes and passes the
 * same {@link InboxContract}: a key being recorded by an open transaction holds every other transaction that
 * processes it until that one commits (then they see a duplicate) or rolls back (then one of them records it);
 * purge skips held entries and forgets only on commit. Its "database clock" is the injected {@link Clock}.
 *
 * <p>For applications' tests: {@code begin()}, process, then {@code commit()} or {@code rollback()} the way the
 * application does with its database.
 */
public final class InMemoryInbox implements Inbox<InMemoryInbox.Transaction> {

    private final Clock clock;
    private final Object lock = new Object();
    private final Map<InboxKey, Instant> committed = new HashMap<>();
    private final Map<InboxKey, Transaction> held = new HashMap<>();

    public InMemoryInbox(Clock clock) {
        this.clock = Objects.requireNonNull(clock, "clock");
    }

    /** A new transaction; use it from one thread at a time, and end it with commit or rollback. */
    public Transaction begin() {
        return new Transaction();
    }

    /** Whether {@code key} is recorded by a committed transaction. */
    public boolean contains(InboxKey key) {
        synchronized (lock) {
            return committed.containsKey(key);
        }
    }

    /** How many entries committed transactions recorded and did not purge. */
    public int size() {
        synchronized (lock) {
            return committed.size();
        }
    }

    @Override
    public InboxOutcome process(Transaction transaction, InboxKey key, InboxHandler<Transaction> handler)
            throws Exception {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(handler, "handler");
        if (!record(owned(transaction), key)) {
            return InboxOutcome.DUPLICATE;
        }
        // Outside the monitor, as a database runs the handler's statements while only the key's row stays locked.
        handler.handle(transaction);
        return InboxOutcome.PROCESSED;
    }

    @Override
    public int purge(Transaction transaction, Duration retention, int maxEntries) {
        requirePurgeArguments(retention, maxEntries);
        Transaction tx = owned(transaction);
        synchronized (lock) {
            tx.requireOpen();
            Instant cutoff = clock.instant().minus(retention);
            List<InboxKey> oldest = committed.entrySet().stream()
                    .filter(entry -> !entry.getValue().isAfter(cutoff) && !held.containsKey(entry.getKey()))
                    .sorted(Map.Entry.comparingByValue(Comparator.naturalOrder()))
                    .limit(maxEntries)
                    .map(Map.Entry::getKey)
                    .toList();
            for (InboxKey key : oldest) {
                held.put(key, tx);
                tx.deleted.add(key);
            }
            return oldest.size();
        }
    }

    /** The argument checks every inbox shares: a negative retention or a batch below 1 is refused. */
    public static void requirePurgeArguments(Duration retention, int maxEntries) {
        Objects.requireNonNull(retention, "retention");
        if (retention.isNegative()) {
            throw new IllegalArgumentException("retention: must not be negative, got: " + retention);
        }
        if (maxEntries < 1) {
            throw new IllegalArgumentException("maxEntries: must be at least 1, got: " + maxEntries);
        }
    }

    private boolean record(Transaction tx, InboxKey key) throws InterruptedException {
        synchronized (lock) {
            tx.requireOpen();
            while (held.containsKey(key) && held.get(key) != tx) {
                lock.wait();
                tx.requireOpen();
            }
            if (held.get(key) == tx) {
                // This transaction recorded it (a duplicate) or purged it (then it is recorded anew).
                if (!tx.deleted.remove(key)) {
                    return false;
                }
            } else if (committed.containsKey(key)) {
                return false;
            }
            held.put(key, tx);
            tx.recorded.put(key, clock.instant());
            return true;
        }
    }

    private Transaction owned(Transaction transaction) {
        Objects.requireNonNull(transaction, "transaction");
        if (transaction.inbox() != this) {
            throw new IllegalArgumentException("transaction: begun on another InMemoryInbox");
        }
        return transaction;
    }

    /** One transaction of the in-memory inbox. */
    public final class Transaction {
        private final Map<InboxKey, Instant> recorded = new HashMap<>();
        private final Set<InboxKey> deleted = new HashSet<>();
        private boolean open = true;

        private Transaction() {
        }

        /** Makes what this transaction recorded and purged visible to all, and ends it. */
        public void commit() {
            synchronized (lock) {
                requireOpen();
                for (InboxKey key : deleted) {
                    committed.remove(key);
                }
                committed.putAll(recorded);
                end();
            }
        }

        /** Forgets what this transaction recorded and purged, and ends it. */
        public void rollback() {
            synchronized (lock) {
                if (open) {
                    end();
                }
            }
        }

        private void end() {
            held.values().removeIf(holder -> holder == this);
            open = false;
            lock.notifyAll();
        }

        private void requireOpen() {
            if (!open) {
                throw new IllegalStateException("the transaction has ended");
            }
        }

        private InMemoryInbox inbox() {
            return InMemoryInbox.this;
        }
    }
}
