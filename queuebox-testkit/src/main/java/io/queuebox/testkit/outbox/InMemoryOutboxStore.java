package io.queuebox.testkit.outbox;

import io.queuebox.domain.ClaimRule;
import io.queuebox.domain.RowState;
import io.queuebox.domain.RowStatus;
import io.queuebox.ports.BacklogStats;
import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.OutboxWriteException;
import io.queuebox.ports.OutboxWriter;
import io.queuebox.ports.Park;
import io.queuebox.ports.ParkedEvent;
import io.queuebox.ports.ReplaySelector;
import io.queuebox.ports.Reschedule;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;

/**
 * An outbox table in memory that behaves like a SQL one: it applies {@link ClaimRule} to decide what a
 * claim takes, fences every update by lease token, and reads its injected {@link Clock} as the "database
 * clock". It passes {@link OutboxStoreContract}, like every real store.
 *
 * <p>It also models write transactions, so the out-of-order commit of the outbox seed can be reproduced:
 * a row takes its sequence when it is inserted ({@link #begin()} then {@link #enqueue(Transaction, OutboxEvent)})
 * and becomes visible to claims only when its transaction commits. {@link #enqueue(OutboxEvent...)} writes
 * and commits in one step. A row of an open transaction holds back the later rows of its aggregate, as an
 * earlier pending row that is not ready does, until its transaction commits or rolls back: so a later event
 * of an aggregate that commits first is never claimed before the earlier one (PostgreSQL gets the same
 * result by making the later writer wait; this store holds back instead, so that a single-threaded test that
 * leaves a transaction open does not hang). A transaction that is never ended holds its aggregates back for
 * good, like an open database transaction.
 *
 * <p>Thread-safe: one lock guards the table, which is what makes concurrent claimers safe.
 */
public final class InMemoryOutboxStore implements OutboxStore, OutboxWriter<InMemoryOutboxStore.Transaction> {

    private final Clock clock;
    private final boolean deleteOnSend;
    private final ReentrantLock lock = new ReentrantLock();
    private final TreeMap<Long, Row> rows = new TreeMap<>();
    private final Map<UUID, Row> rowsById = new HashMap<>();
    private final Set<Transaction> openWrites = new LinkedHashSet<>();
    private long lastSequence;

    private InMemoryOutboxStore(Clock clock, boolean deleteOnSend) {
        this.clock = Objects.requireNonNull(clock, "clock");
        this.deleteOnSend = deleteOnSend;
    }

    /** A store on the system clock that keeps sent rows until they are purged. */
    public static InMemoryOutboxStore create() {
        return builder().build();
    }

    /** A store whose "database clock" is {@code clock} (a {@code MutableClock} in most tests). */
    public static InMemoryOutboxStore withClock(Clock clock) {
        return builder().clock(clock).build();
    }

    public static Builder builder() {
        return new Builder();
    }

    // ------------------------------------------------------------------------------------------ writing

    /** Begins a write transaction; its rows are invisible to claims until {@link Transaction#commit()}. */
    public Transaction begin() {
        return new Transaction();
    }

    /** Writes the events in one committed transaction, in order. */
    public void enqueue(OutboxEvent... events) {
        enqueueAll(List.of(events));
    }

    /** Writes the events in one committed transaction, in list order. */
    public void enqueueAll(List<OutboxEvent> events) {
        try (Transaction transaction = begin()) {
            enqueueAll(transaction, events);
            transaction.commit();
        }
    }

    @Override
    public void enqueue(Transaction transaction, OutboxEvent event) {
        enqueueAll(transaction, List.of(requireEvent(event)));
    }

    @Override
    public void enqueueAll(Transaction transaction, List<OutboxEvent> events) {
        Objects.requireNonNull(transaction, "transaction");
        Objects.requireNonNull(events, "events");
        if (transaction.store() != this) {
            throw new IllegalArgumentException("transaction belongs to another InMemoryOutboxStore");
        }
        lock.lock();
        try {
            transaction.requireOpen();
            Instant now = clock.instant();
            for (OutboxEvent event : events) {
                requireEvent(event);
                if (findRow(event.eventId()) != null || transaction.contains(event.eventId())) {
                    throw new OutboxWriteException("event id " + event.eventId() + " is already in the outbox", null);
                }
                transaction.inserted.add(new Row(++lastSequence, event, now));
            }
            if (!transaction.inserted.isEmpty()) {
                openWrites.add(transaction);
            }
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------------------------------ claiming

    @Override
    public ClaimBatch claim(ClaimRequest request) {
        Objects.requireNonNull(request, "request");
        LeaseToken token = LeaseToken.random();
        lock.lock();
        try {
            Instant now = clock.instant();
            List<RowState> states = new ArrayList<>(rows.size());
            for (Row row : rows.values()) {
                if (row.status != RowStatus.SENT) {
                    states.add(row.state());
                }
            }
            int committed = states.size();
            // Uncommitted rows are never claimed, but each holds back the later rows of its aggregate.
            for (Transaction open : openWrites) {
                for (Row row : open.inserted) {
                    states.add(new RowState(row.sequence, row.event.aggregate(), RowStatus.PENDING, Instant.MAX, null));
                }
            }
            Instant leaseUntil = now.plus(request.leaseLength());
            List<ClaimedDelivery> deliveries = new ArrayList<>();
            List<Long> selected = ClaimRule.select(states, now, request);
            for (long sequence : selected) {
                Row row = rows.get(sequence);
                row.lease = token;
                row.leaseUntil = leaseUntil;
                row.leaseOwner = request.owner();
                deliveries.add(new ClaimedDelivery(row.sequence, row.event, row.attempts, token, row.createdAt));
            }
            List<RowState> committedStates = states.subList(0, committed);
            if (ClaimRule.heldElsewhere(committedStates, now, selected, request)) {
                return ClaimBatch.heldElsewhere(token);
            }
            return new ClaimBatch(token, deliveries, ClaimRule.holdsBack(committedStates, selected, request));
        } finally {
            lock.unlock();
        }
    }

    @Override
    public int markSent(LeaseToken lease, Collection<UUID> eventIds) {
        return updateLeased(lease, eventIds, (row, now) -> {
            if (deleteOnSend) {
                remove(row);
            } else {
                row.status = RowStatus.SENT;
                row.sentAt = now;
                row.clearLease();
            }
        });
    }

    @Override
    public int reschedule(LeaseToken lease, List<Reschedule> retries) {
        Map<UUID, Reschedule> byId = indexBy(retries, Reschedule::eventId);
        return updateLeased(lease, byId.keySet(), (row, now) -> {
            Reschedule retry = byId.get(row.event.eventId());
            row.nextAttemptAt = now.plus(retry.delay());
            row.attempts++;
            row.lastError = retry.reason();
            row.clearLease();
        });
    }

    @Override
    public int park(LeaseToken lease, List<Park> parkings) {
        Map<UUID, Park> byId = indexBy(parkings, Park::eventId);
        return updateLeased(lease, byId.keySet(), (row, now) -> {
            row.status = RowStatus.PARKED;
            row.attempts++;
            row.lastError = byId.get(row.event.eventId()).reason();
            row.clearLease();
        });
    }

    @Override
    public int release(LeaseToken lease, Collection<UUID> eventIds) {
        return updateLeased(lease, eventIds, (row, now) -> row.clearLease());
    }

    @Override
    public int renew(LeaseToken lease, Duration leaseLength) {
        Objects.requireNonNull(lease, "lease");
        requirePositive(leaseLength, "leaseLength");
        lock.lock();
        try {
            Instant until = clock.instant().plus(leaseLength);
            int renewed = 0;
            for (Row row : rows.values()) {
                if (lease.equals(row.lease)) {
                    row.leaseUntil = until;
                    renewed++;
                }
            }
            return renewed;
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------------------------------ housekeeping

    @Override
    public Optional<Duration> timeUntilNextDue() {
        lock.lock();
        try {
            Instant now = clock.instant();
            Instant earliest = null;
            for (Row row : rows.values()) {
                if (row.status != RowStatus.PENDING) {
                    continue;
                }
                // Ordering is not applied here: a row held back by its aggregate counts as due (like SQL stores).
                Instant readyAt = row.nextAttemptAt;
                if (row.leaseUntil != null && row.leaseUntil.isAfter(readyAt)) {
                    readyAt = row.leaseUntil;
                }
                if (earliest == null || readyAt.isBefore(earliest)) {
                    earliest = readyAt;
                }
            }
            if (earliest == null) {
                return Optional.empty();
            }
            return Optional.of(earliest.isAfter(now) ? Duration.between(now, earliest) : Duration.ZERO);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public int purgeSent(Duration retention, int maxRows) {
        Objects.requireNonNull(retention, "retention");
        if (retention.isNegative()) {
            throw new IllegalArgumentException("retention must not be negative, got: " + retention);
        }
        if (maxRows < 1) {
            throw new IllegalArgumentException("maxRows must be >= 1, got: " + maxRows);
        }
        lock.lock();
        try {
            Instant cutoff = clock.instant().minus(retention);
            int purged = 0;
            for (Iterator<Row> it = rows.values().iterator(); it.hasNext() && purged < maxRows; ) {
                Row row = it.next();
                if (row.status == RowStatus.SENT && !row.sentAt.isAfter(cutoff)) {
                    it.remove();
                    rowsById.remove(row.event.eventId());
                    purged++;
                }
            }
            return purged;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public BacklogStats stats() {
        lock.lock();
        try {
            Instant now = clock.instant();
            long pending = 0;
            long leased = 0;
            long parked = 0;
            Instant oldest = null;
            for (Row row : rows.values()) {
                switch (row.status) {
                    case PENDING -> {
                        pending++;
                        if (row.state().hasLiveLease(now)) {
                            leased++;
                        }
                        if (oldest == null || row.createdAt.isBefore(oldest)) {
                            oldest = row.createdAt;
                        }
                    }
                    case PARKED -> parked++;
                    case SENT -> { }
                }
            }
            Optional<Duration> age = oldest == null ? Optional.empty()
                    : Optional.of(oldest.isAfter(now) ? Duration.ZERO : Duration.between(oldest, now));
            return new BacklogStats(pending, leased, parked, age);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public List<ParkedEvent> parked(ReplaySelector selector, int limit, int maxPayloadBytes) {
        ParkedEvent.requirePayloadCap(maxPayloadBytes);
        // Under the lock via parked(selector, limit); the copies it caps are the rows as read.
        return parked(selector, limit).stream().map(row -> row.withPayloadCappedAt(maxPayloadBytes)).toList();
    }

    @Override
    public List<ParkedEvent> parked(ReplaySelector selector, int limit) {
        Objects.requireNonNull(selector, "selector");
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be >= 1, got: " + limit);
        }
        lock.lock();
        try {
            List<ParkedEvent> parked = new ArrayList<>();
            for (Row row : rows.values()) {
                if (parked.size() == limit) {
                    break;
                }
                if (row.status == RowStatus.PARKED && selector.matches(row.event)) {
                    parked.add(new ParkedEvent(row.sequence, row.event, row.attempts, row.lastError, row.createdAt));
                }
            }
            return List.copyOf(parked);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public int replay(ReplaySelector selector) {
        Objects.requireNonNull(selector, "selector");
        lock.lock();
        try {
            Instant now = clock.instant();
            int replayed = 0;
            for (Row row : rows.values()) {
                if (row.status == RowStatus.PARKED && selector.matches(row.event)) {
                    row.status = RowStatus.PENDING;
                    row.nextAttemptAt = now;
                    row.attempts = 0;
                    row.clearLease();
                    replayed++;
                }
            }
            return replayed;
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------------------------------ inspection

    /** A snapshot of every committed row (sent ones too, until purged), in sequence order. */
    public List<StoredRow> rows() {
        lock.lock();
        try {
            return rows.values().stream().map(Row::snapshot).toList();
        } finally {
            lock.unlock();
        }
    }

    /** The committed row of an event, if the store holds it. */
    public Optional<StoredRow> row(UUID eventId) {
        lock.lock();
        try {
            return Optional.ofNullable(findRow(eventId)).map(Row::snapshot);
        } finally {
            lock.unlock();
        }
    }

    /** Where an event stands; empty when it was never committed, or was deleted or purged. */
    public Optional<RowStatus> statusOf(UUID eventId) {
        return row(eventId).map(StoredRow::status);
    }

    /** The ids of the sent rows still held, in sequence order. */
    public List<UUID> sentEventIds() {
        return rows().stream().filter(r -> r.status() == RowStatus.SENT).map(r -> r.event().eventId()).toList();
    }

    /** Whether sent rows are deleted instead of marked. */
    public boolean deletesOnSend() {
        return deleteOnSend;
    }

    // ------------------------------------------------------------------------------------------ internals

    private interface RowUpdate {
        void apply(Row row, Instant now);
    }

    private int updateLeased(LeaseToken lease, Collection<UUID> eventIds, RowUpdate update) {
        Objects.requireNonNull(lease, "lease");
        Objects.requireNonNull(eventIds, "eventIds");
        lock.lock();
        try {
            Instant now = clock.instant();
            int updated = 0;
            for (UUID eventId : new HashSet<>(eventIds)) {
                Row row = findRow(eventId);
                // Fencing: a row re-claimed by someone else carries another token and is left alone.
                if (row != null && lease.equals(row.lease)) {
                    update.apply(row, now);
                    updated++;
                }
            }
            return updated;
        } finally {
            lock.unlock();
        }
    }

    private Row findRow(UUID eventId) {
        return rowsById.get(eventId);
    }

    private void remove(Row row) {
        rows.remove(row.sequence);
        rowsById.remove(row.event.eventId());
    }

    private static <T> Map<UUID, T> indexBy(List<T> items, Function<T, UUID> id) {
        Objects.requireNonNull(items, "items");
        Map<UUID, T> byId = new HashMap<>();
        for (T item : items) {
            byId.put(id.apply(Objects.requireNonNull(item, "item")), item);
        }
        return byId;
    }

    private static OutboxEvent requireEvent(OutboxEvent event) {
        if (event == null) {
            throw new IllegalArgumentException("event must not be null");
        }
        return event;
    }

    private static void requirePositive(Duration duration, String name) {
        Objects.requireNonNull(duration, name);
        if (duration.isNegative() || duration.isZero()) {
            throw new IllegalArgumentException(name + " must be positive, got: " + duration);
        }
    }

    private void commit(Transaction transaction) {
        lock.lock();
        try {
            transaction.requireOpen();
            for (Row row : transaction.inserted) {
                if (findRow(row.event.eventId()) != null) {
                    throw new OutboxWriteException("event id " + row.event.eventId() + " is already in the outbox", null);
                }
            }
            for (Row row : transaction.inserted) {
                rows.put(row.sequence, row);
                rowsById.put(row.event.eventId(), row);
            }
            transaction.open = false;
            openWrites.remove(transaction);
        } finally {
            lock.unlock();
        }
    }

    private void rollback(Transaction transaction) {
        lock.lock();
        try {
            transaction.inserted.clear();
            transaction.open = false;
            openWrites.remove(transaction);
        } finally {
            lock.unlock();
        }
    }

    /**
     * A write transaction of this store. Rows inserted in it hold their sequence from insert time and
     * become visible at {@link #commit()}; {@link #rollback()} (or {@link #close()} without commit)
     * discards them.
     */
    public final class Transaction implements AutoCloseable {
        private final List<Row> inserted = new ArrayList<>();
        private boolean open = true;

        private Transaction() {
        }

        /** Makes the inserted rows visible, in one step. */
        public void commit() {
            InMemoryOutboxStore.this.commit(this);
        }

        /** Discards the inserted rows; their sequences stay unused, as in a database. */
        public void rollback() {
            InMemoryOutboxStore.this.rollback(this);
        }

        /** The sequences taken by this transaction's inserts, in insert order. */
        public List<Long> sequences() {
            lock.lock();
            try {
                return inserted.stream().map(row -> row.sequence).toList();
            } finally {
                lock.unlock();
            }
        }

        /** Rolls back unless committed. */
        @Override
        public void close() {
            lock.lock();
            try {
                if (open) {
                    rollback();
                }
            } finally {
                lock.unlock();
            }
        }

        private InMemoryOutboxStore store() {
            return InMemoryOutboxStore.this;
        }

        private void requireOpen() {
            if (!open) {
                throw new IllegalStateException("transaction is already committed or rolled back");
            }
        }

        private boolean contains(UUID eventId) {
            return inserted.stream().anyMatch(row -> row.event.eventId().equals(eventId));
        }
    }

    /**
     * One row as a test sees it.
     *
     * @param leaseUntil null when the row carries no lease
     * @param lease      the token the row carries, also after its lease expired, until someone re-claims,
     *                   marks, reschedules, parks or releases it
     * @param sentAt     null unless sent
     * @param lastError  null until an attempt failed
     */
    public record StoredRow(long sequence, OutboxEvent event, RowStatus status, int attempts, String lastError,
                            Instant createdAt, Instant nextAttemptAt, LeaseToken lease, Instant leaseUntil,
                            String leaseOwner, Instant sentAt) {
    }

    private static final class Row {
        final long sequence;
        final OutboxEvent event;
        final Instant createdAt;
        RowStatus status = RowStatus.PENDING;
        Instant nextAttemptAt;
        int attempts;
        String lastError;
        LeaseToken lease;
        Instant leaseUntil;
        String leaseOwner;
        Instant sentAt;

        Row(long sequence, OutboxEvent event, Instant createdAt) {
            this.sequence = sequence;
            this.event = event;
            this.createdAt = createdAt;
            this.nextAttemptAt = createdAt;
        }

        RowState state() {
            return new RowState(sequence, event.aggregate(), status, nextAttemptAt, leaseUntil);
        }

        void clearLease() {
            lease = null;
            leaseUntil = null;
            leaseOwner = null;
        }

        StoredRow snapshot() {
            return new StoredRow(sequence, event, status, attempts, lastError, createdAt, nextAttemptAt, lease,
                    leaseUntil, leaseOwner, sentAt);
        }
    }

    /** Builds an {@link InMemoryOutboxStore}. */
    public static final class Builder {
        private Clock clock = Clock.systemUTC();
        private boolean deleteOnSend;

        private Builder() {
        }

        /** The store's "database clock"; the system UTC clock by default. */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /** Whether {@code markSent} deletes rows instead of marking them sent; false by default. */
        public Builder deleteOnSend(boolean deleteOnSend) {
            this.deleteOnSend = deleteOnSend;
            return this;
        }

        public InMemoryOutboxStore build() {
            return new InMemoryOutboxStore(clock, deleteOnSend);
        }
    }
}
