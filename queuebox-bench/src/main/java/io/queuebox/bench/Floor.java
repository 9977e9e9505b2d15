package io.queuebox.bench;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The pure-SQL floor: no engine, no publisher, only the minimal statements any relay of this table has to run.
 * A table of the outbox's shape ({@code LIKE queuebox_outbox INCLUDING ALL}: same columns, defaults, check and
 * indexes; not the insert triggers, which cost nothing when draining) is filled like the outbox, then
 * {@code loops} threads each repeat, in one transaction per batch: claim {@code batch} pending rows in
 * sequence order with {@code FOR UPDATE SKIP LOCKED}, reading every column a publisher needs (id, aggregate,
 * type, payload, headers), then mark them all in one statement, {@code UPDATE … SET status = 'sent', sent_at =
 * now()} or {@code DELETE}, and commit. No ordering between aggregates, no lease, no retry bookkeeping: what a
 * relay can at best approach on this database.
 */
final class Floor {

    static final String TABLE = "bench_floor";

    enum Marking { UPDATE, DELETE }

    private final BenchDatabase db;

    Floor(BenchDatabase db) throws java.sql.SQLException {
        this.db = db;
        db.createOutboxShapedTable(TABLE);
    }

    Run run(Marking marking, int loops, int batch, int rows, int aggregates) throws Exception {
        db.execute("TRUNCATE " + TABLE);
        db.fill(TABLE, rows, aggregates);
        String claim = "SELECT event_id, aggregate_type, aggregate_id, event_type, payload, headers FROM " + TABLE
                + " WHERE status = 'pending' ORDER BY seq LIMIT " + batch + " FOR UPDATE SKIP LOCKED";
        String mark = marking == Marking.UPDATE
                ? "UPDATE " + TABLE + " SET status = 'sent', sent_at = now() WHERE event_id = ANY(?)"
                : "DELETE FROM " + TABLE + " WHERE event_id = ANY(?)";
        AtomicLong marked = new AtomicLong();
        AtomicLong batches = new AtomicLong();
        AtomicReference<Exception> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        Cpu cpu = Cpu.start();
        long start = System.nanoTime();
        for (int i = 0; i < loops; i++) {
            Thread loop = new Thread(() -> {
                try (Connection c = db.rawDataSource().getConnection()) {
                    c.setAutoCommit(false);
                    try (PreparedStatement select = c.prepareStatement(claim); PreparedStatement update = c.prepareStatement(mark)) {
                        while (failure.get() == null) {
                            List<UUID> ids = new ArrayList<>(batch);
                            long bytes = 0;
                            try (ResultSet rs = select.executeQuery()) {
                                while (rs.next()) {
                                    ids.add(rs.getObject(1, UUID.class));
                                    bytes += rs.getString(2).length() + rs.getString(3).length() + rs.getString(4).length()
                                            + rs.getBytes(5).length + rs.getString(6).length();
                                }
                            }
                            if (ids.isEmpty()) {
                                c.commit();
                                return;
                            }
                            Array array = c.createArrayOf("uuid", ids.toArray());
                            update.setArray(1, array);
                            int n = update.executeUpdate();
                            c.commit();
                            if (n != ids.size() || bytes <= 0) {
                                throw new IllegalStateException("floor marked " + n + " of " + ids.size() + " claimed rows");
                            }
                            marked.addAndGet(n);
                            batches.incrementAndGet();
                        }
                    }
                } catch (Exception e) {
                    failure.compareAndSet(null, e);
                }
            }, "floor-loop-" + i);
            threads.add(loop);
            loop.start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        double seconds = Brokers.seconds(start);
        Run run = Run.of(rows, seconds, cpu, String.format(Locale.ROOT, "%d batches", batches.get()));
        if (failure.get() != null) {
            throw new IllegalStateException("SQL floor (" + marking + ") failed", failure.get());
        }
        long left = marking == Marking.UPDATE ? db.count(TABLE, "status <> 'sent'") : db.count(TABLE, "true");
        if (marked.get() != rows || left != 0) {
            throw new IllegalStateException("SQL floor (" + marking + ") marked " + marked.get() + " of " + rows
                    + " rows, " + left + " left");
        }
        return run;
    }
}
