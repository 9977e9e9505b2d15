package io.queuebox.bench;

import java.io.PrintStream;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * The floor of notify latency: PostgreSQL's LISTEN/NOTIFY read through pgjdbc, and nothing of QueueBox. A table of the
 * outbox's shape ({@code bench_notify}) with a row trigger that notifies each inserted row's event id, as QueueBox's
 * {@code <table>_notify_rows} does; producers commit one plain INSERT per transaction; one session listens with
 * {@code PGConnection.getNotifications(timeout)}, as QueueBox's wake source does, and each notification counts as
 * received when that call returns it ({@code received}: commit → notification, the moment the relay could wake).
 *
 * <p>pgjdbc keeps reading while another message arrives within a millisecond of the last (each check waits up to
 * 1 ms for one), so under a steady stream one call gathers many notifications and returns them together: this cell
 * shows what that costs, apart from any claim or publish.
 */
final class NotifyAlone {

    static final String TABLE = "bench_notify";
    static final String CHANNEL = "bench_notify";
    private static final String FUNCTION = "bench_notify_rows";
    private static final int AWAIT_MILLIS = 500;

    private final BenchDatabase db;
    private final Brokers brokers;
    private final PrintStream out;

    NotifyAlone(BenchDatabase db, Brokers brokers, PrintStream out) {
        this.db = db;
        this.brokers = brokers;
        this.out = out;
    }

    Map<String, Object> run(int[] rates, Duration warmup, Duration measure) throws Exception {
        db.createOutboxShapedTable(TABLE);
        db.execute("TRUNCATE " + TABLE);
        db.execute("CREATE OR REPLACE FUNCTION " + FUNCTION + "() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                + " PERFORM pg_notify('" + CHANNEL + "', NEW.event_id::text); RETURN NULL; END $$");
        db.execute("DROP TRIGGER IF EXISTS " + FUNCTION + " ON " + TABLE);
        db.execute("CREATE TRIGGER " + FUNCTION + " AFTER INSERT ON " + TABLE + " FOR EACH ROW EXECUTE FUNCTION "
                + FUNCTION + "()");
        Map<String, Long> received = new ConcurrentHashMap<>();
        AtomicBoolean listening = new AtomicBoolean(true);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Connection listenerConnection = db.rawDataSource().getConnection();
        listenerConnection.setAutoCommit(true);
        try (Statement listen = listenerConnection.createStatement()) {
            listen.execute("LISTEN " + CHANNEL);
        }
        PGConnection pg = listenerConnection.unwrap(PGConnection.class);
        Thread listener = new Thread(() -> {
            try {
                while (listening.get()) {
                    PGNotification[] got = pg.getNotifications(AWAIT_MILLIS);
                    long at = System.nanoTime();
                    if (got != null) {
                        for (PGNotification notification : got) {
                            received.putIfAbsent(notification.getParameter(), at);
                        }
                    }
                }
            } catch (Exception e) {
                if (listening.get()) {
                    failure.compareAndSet(null, e);
                }
            }
        }, "notify-alone");
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("mode", "notify-alone");
        result.put("system", "LISTEN/NOTIFY alone (pgjdbc)");
        try {
            listener.start();
            PlainInserts.awaitAProbeSeen(db, TABLE, received, failure, "LISTEN/NOTIFY alone", Duration.ofSeconds(30));
            received.clear();
            List<Map<String, Object>> rows = new ArrayList<>();
            for (int rate : rates) {
                Map<String, Map<String, Long>> observers = new LinkedHashMap<>();
                observers.put("received", received);
                Map<String, Map<String, Object>> steady = Steady.run("LISTEN/NOTIFY alone", rate, warmup, measure,
                        this::session, observers, out, brokers::rabbitDiagnostic, Steady.WINDOW, Steady.EXTENDED_WAIT);
                if (failure.get() != null) {
                    throw new IllegalStateException("LISTEN/NOTIFY alone failed", failure.get());
                }
                rows.add(steady.get("received"));
            }
            result.put("steady", rows);
            return result;
        } finally {
            listening.set(false);
            listener.join(Duration.ofSeconds(5).toMillis());
            listenerConnection.close();
            db.execute("DROP TRIGGER IF EXISTS " + FUNCTION + " ON " + TABLE);
            db.execute("DROP FUNCTION IF EXISTS " + FUNCTION + "()");
            db.execute("TRUNCATE " + TABLE);
        }
    }

    private Steady.Session session() throws Exception {
        return PlainInserts.session(db, TABLE);
    }
}
