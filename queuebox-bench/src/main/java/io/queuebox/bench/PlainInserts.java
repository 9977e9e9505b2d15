package io.queuebox.bench;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicReference;

/** Producers of the peers' latency cells: one plain INSERT of the outbox's columns per transaction, no QueueBox writer. */
final class PlainInserts {

    private PlainInserts() {
    }

    /**
     * Commits probe rows into {@code table} until {@code seen} holds one of them (the peer under test hears the table),
     * for up to {@code within}; throws naming {@code peer} when it never does, or as soon as {@code failure} holds one.
     */
    static void awaitAProbeSeen(BenchDatabase db, String table, Map<String, Long> seen, AtomicReference<Throwable> failure,
                                String peer, Duration within) throws Exception {
        long deadline = System.nanoTime() + within.toNanos();
        Set<String> probes = ConcurrentHashMap.newKeySet();
        try (Steady.Session session = session(db, table)) {
            while (System.nanoTime() < deadline) {
                if (failure.get() != null) {
                    throw new IllegalStateException(peer + " failed", failure.get());
                }
                session.commitOne(0, (id, at) -> probes.add(id));
                for (int i = 0; i < 10; i++) {
                    Thread.sleep(20);
                    if (probes.stream().anyMatch(seen::containsKey)) {
                        return;
                    }
                }
            }
        }
        throw new IllegalStateException(peer + " never saw a probe row");
    }

    static Steady.Session session(BenchDatabase db, String table) throws Exception {
        Connection connection = db.rawDataSource().getConnection();
        connection.setAutoCommit(false);
        PreparedStatement insert = connection.prepareStatement("INSERT INTO " + table
                + " (event_id, aggregate_type, aggregate_id, event_type, payload, content_type, headers)"
                + " VALUES (?, 'order', ?, 'BenchEvent', ?, 'application/json', '{}'::jsonb)");
        return new Steady.Session() {
            @Override
            public void commitOne(long index, Steady.Committed committed) throws Exception {
                UUID id = UUID.randomUUID();
                insert.setObject(1, id);
                insert.setString(2, "agg-" + ThreadLocalRandom.current().nextInt(1000));
                insert.setBytes(3, Brokers.payload((int) index));
                insert.executeUpdate();
                connection.commit();
                committed.at(id.toString(), System.nanoTime());
            }

            @Override
            public void close() throws Exception {
                insert.close();
                connection.close();
            }
        };
    }
}
