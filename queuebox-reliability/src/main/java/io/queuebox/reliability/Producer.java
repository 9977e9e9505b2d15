package io.queuebox.reliability;

import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxWriter;
import io.queuebox.postgres.PostgresOutbox;
import io.queuebox.postgres.PostgresOutboxSettings;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Writes events as applications do: transactions of 1-5 events for random aggregates, through the library's
 * writer, on connections of their own. Some transactions roll back; some stay open 0.5-2 s while others
 * commit, and other writers deliberately pick the aggregates those hold, so later events of the same
 * aggregate queue up behind an uncommitted earlier one.
 *
 * <p>It records what it knows: the ids of committed and of rolled-back transactions, when each commit
 * returned, and the ids whose commit failed without an answer (in doubt; the table decides them).
 */
final class Producer implements AutoCloseable {

    static final String AGGREGATE_TYPE = "order";

    private final String jdbcUrl;
    private final Workload workload;
    private final OutboxWriter<Connection> writer = PostgresOutbox.jdbcWriter(PostgresOutboxSettings.defaults());
    private final Map<UUID, Long> committedAt = new ConcurrentHashMap<>();
    private final Set<UUID> rolledBack = ConcurrentHashMap.newKeySet();
    private final Set<UUID> inDoubt = ConcurrentHashMap.newKeySet();
    private final Set<String> held = ConcurrentHashMap.newKeySet();
    private final AtomicLong heldTransactions = new AtomicLong();
    private final AtomicLong writesBehindHeld = new AtomicLong();
    /**
     * The longest span from a transaction's first insert to its commit: {@code created_at} is the transaction's start
     * ({@code now()}), so a row can become visible this much later than its {@code created_at} says.
     */
    private final AtomicLong longestTransactionNanos = new AtomicLong();
    private final AtomicLong failedTransactions = new AtomicLong();
    private final AtomicLong counter = new AtomicLong();
    private final List<Thread> threads = new ArrayList<>();
    private volatile boolean stopped;
    private volatile long stopAfterEvents = Long.MAX_VALUE;

    /** What the producer writes and how fast. */
    record Workload(int threads, int aggregates, double transactionsPerSecond, double rollbackShare,
                    double heldShare, long seed) {
    }

    Producer(String jdbcUrl, Workload workload) {
        this.jdbcUrl = jdbcUrl;
        this.workload = workload;
    }

    void start() {
        for (int i = 0; i < workload.threads(); i++) {
            long seed = workload.seed() * 31 + i;
            Thread thread = new Thread(() -> loop(new SplittableRandom(seed)), "producer-" + i);
            thread.setDaemon(true);
            threads.add(thread);
            thread.start();
        }
    }

    /** Ends the workload once this many events were committed (the threads finish their transactions). */
    void stopAfter(long events) {
        stopAfterEvents = events;
    }

    /** Stops writing and waits for the open transactions to end. */
    void stop() throws InterruptedException {
        stopped = true;
        for (Thread thread : threads) {
            thread.join(30_000);
        }
    }

    boolean finished() {
        return threads.stream().noneMatch(Thread::isAlive);
    }

    private void loop(SplittableRandom random) {
        double perThread = workload.transactionsPerSecond() / workload.threads();
        long intervalNanos = (long) (1e9 / perThread);
        long next = System.nanoTime();
        Connection connection = null;
        while (!stopped && committedAt.size() < stopAfterEvents) {
            try {
                if (connection == null) {
                    connection = DriverManager.getConnection(jdbcUrl);
                    connection.setAutoCommit(false);
                }
                transaction(connection, random);
            } catch (SQLException | RuntimeException e) {
                failedTransactions.incrementAndGet();
                closeQuietly(connection);
                connection = null;
                sleep(200);
            }
            next += intervalNanos;
            long wait = next - System.nanoTime();
            if (wait > 0) {
                sleep(wait / 1_000_000);
            } else if (wait < -1_000_000_000L) {
                next = System.nanoTime(); // behind after an outage: carry on at the rate, no burst
            }
        }
        closeQuietly(connection);
    }

    private void transaction(Connection connection, SplittableRandom random) throws SQLException {
        int size = 1 + random.nextInt(5);
        List<OutboxEvent> events = new ArrayList<>(size);
        List<String> aggregates = new ArrayList<>(size);
        // One transaction in ten writes behind an open one, on purpose; more would make the producer, not
        // the relay, the bottleneck (each such write waits up to 2 s for the aggregate's lock).
        boolean behindHeld = false;
        boolean pickHeld = !held.isEmpty() && random.nextDouble() < 0.1;
        for (int i = 0; i < size; i++) {
            String aggregate = null;
            if (pickHeld && i == 0) {
                aggregate = held.stream().findAny().orElse(null);
                behindHeld = aggregate != null;
            }
            if (aggregate == null) {
                aggregate = "a" + random.nextInt(workload.aggregates());
            }
            aggregates.add(aggregate);
            long n = counter.incrementAndGet();
            byte[] payload = ("{\"n\":" + n + ",\"aggregate\":\"" + aggregate + "\"}").getBytes(StandardCharsets.UTF_8);
            events.add(OutboxEvent.of(AGGREGATE_TYPE, aggregate, "Changed", payload));
        }
        if (behindHeld) {
            writesBehindHeld.incrementAndGet();
        }
        boolean rollback = random.nextDouble() < workload.rollbackShare();
        boolean hold = !rollback && random.nextDouble() < workload.heldShare();
        long began = System.nanoTime();
        try {
            writer.enqueueAll(connection, events);
            if (hold) {
                heldTransactions.incrementAndGet();
                held.addAll(aggregates);
                sleep(500 + random.nextInt(1500));
            }
            if (rollback) {
                connection.rollback();
                events.forEach(event -> rolledBack.add(event.eventId()));
                return;
            }
        } catch (SQLException | RuntimeException e) {
            // Nothing was committed: the transaction failed before commit.
            events.forEach(event -> rolledBack.add(event.eventId()));
            safeRollback(connection);
            throw e;
        } finally {
            if (hold) {
                aggregates.forEach(held::remove);
            }
        }
        try {
            connection.commit();
            long at = System.nanoTime();
            events.forEach(event -> committedAt.put(event.eventId(), at));
            longestTransactionNanos.accumulateAndGet(at - began, Math::max);
        } catch (SQLException e) {
            // The commit may or may not have happened: the table decides.
            events.forEach(event -> inDoubt.add(event.eventId()));
            throw e;
        }
    }

    private static void safeRollback(Connection connection) {
        try {
            connection.rollback();
        } catch (SQLException ignored) {
            // the connection is broken; the server rolled back
        }
    }

    Map<UUID, Long> committedAt() {
        return committedAt;
    }

    Set<UUID> rolledBack() {
        return rolledBack;
    }

    Set<UUID> inDoubt() {
        return inDoubt;
    }

    long heldTransactions() {
        return heldTransactions.get();
    }

    long writesBehindHeld() {
        return writesBehindHeld.get();
    }

    long longestTransactionMillis() {
        return TimeUnit.NANOSECONDS.toMillis(longestTransactionNanos.get());
    }

    long failedTransactions() {
        return failedTransactions.get();
    }

    private static void closeQuietly(Connection connection) {
        if (connection != null) {
            try {
                connection.close();
            } catch (SQLException ignored) {
                // broken already
            }
        }
    }

    private static void sleep(long millis) {
        if (millis <= 0) {
            return;
        }
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() throws InterruptedException {
        stop();
    }
}
