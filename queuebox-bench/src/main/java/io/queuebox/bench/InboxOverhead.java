package io.queuebox.bench;

import io.queuebox.inbox.InboxDatabase;
import io.queuebox.inbox.InboxSettings;
import io.queuebox.inbox.JdbcInbox;
import io.queuebox.ports.InboxKey;
import io.queuebox.ports.InboxOutcome;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;

/**
 * What the inbox costs a consumer per message: the same consumer threads apply the same messages, one database
 * transaction each, once writing only the business row ("plain") and once through {@link JdbcInbox#process}
 * (the inbox entry, then the same business row). The broker's side (receive, acknowledge) is the same for both and
 * left out, so the difference is the inbox's alone. Repetitions alternate which goes first; medians reported.
 */
final class InboxOverhead {

    static final String SCHEMA = "bench_inbox";
    private static final String PLAIN = SCHEMA + ".plain_effects";
    private static final String WITH_INBOX = SCHEMA + ".inbox_effects";
    private static final String CONSUMER = "bench-consumer";

    private final BenchDatabase db;
    private final DataSource dataSource;
    private final JdbcInbox inbox;
    private final PrintStream out;

    InboxOverhead(BenchDatabase db, PrintStream out) throws java.sql.SQLException {
        this.db = db;
        this.dataSource = db.rawDataSource();
        this.out = out;
        this.inbox = JdbcInbox.create(InboxSettings.builder(InboxDatabase.POSTGRESQL).schema(SCHEMA).build());
        inbox.createSchema(dataSource);
        for (String table : List.of(PLAIN, WITH_INBOX)) {
            db.execute("CREATE TABLE IF NOT EXISTS " + table + " (event_id uuid NOT NULL, aggregate_id text NOT NULL,"
                    + " payload bytea NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())");
        }
    }

    Map<String, Object> run(int messages, int threads, int reps, int aggregates) throws Exception {
        // The first runs of a fresh JVM run interpreted code.
        once(false, Math.min(messages, 2000), threads, aggregates);
        once(true, Math.min(messages, 2000), threads, aggregates);
        List<Map<String, Object>> runs = new ArrayList<>();
        for (int rep = 1; rep <= reps; rep++) {
            boolean inboxFirst = rep % 2 == 0;
            for (boolean withInbox : inboxFirst ? new boolean[] {true, false} : new boolean[] {false, true}) {
                Map<String, Object> run = once(withInbox, messages, threads, aggregates);
                run.put("rep", rep);
                runs.add(run);
                out.printf(Locale.ROOT, "  rep %d %-6s %7d messages, %d threads: %8.0f messages/s, %7.1f µs per message%n", rep,
                        run.get("consumer"), messages, threads, run.get("messagesPerSecond"), run.get("microsPerMessage"));
            }
        }
        Double plainMicros = Stats.median(Stats.column(of(runs, "plain"), "microsPerMessage"));
        Double inboxMicros = Stats.median(Stats.column(of(runs, "inbox"), "microsPerMessage"));
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("messages", messages);
        result.put("threads", threads);
        result.put("reps", reps);
        result.put("plainMessagesPerSecond", Stats.median(Stats.column(of(runs, "plain"), "messagesPerSecond")));
        result.put("inboxMessagesPerSecond", Stats.median(Stats.column(of(runs, "inbox"), "messagesPerSecond")));
        result.put("plainMicrosPerMessage", plainMicros);
        result.put("inboxMicrosPerMessage", inboxMicros);
        result.put("ratio", Stats.ratio(inboxMicros, plainMicros));
        result.put("overheadMicrosPerMessage", plainMicros == null || inboxMicros == null ? null
                : Stats.round(inboxMicros - plainMicros, 1));
        result.put("runs", runs);
        out.printf(Locale.ROOT, "  medians: plain %s µs, inbox %s µs per message; inbox ÷ plain %s; overhead %s µs per message%n",
                plainMicros, inboxMicros, result.get("ratio"), result.get("overheadMicrosPerMessage"));
        return result;
    }

    private static List<Map<String, Object>> of(List<Map<String, Object>> runs, String consumer) {
        return runs.stream().filter(run -> consumer.equals(run.get("consumer"))).toList();
    }

    private Map<String, Object> once(boolean withInbox, int messages, int threads, int aggregates) throws Exception {
        db.execute("TRUNCATE " + PLAIN + ", " + WITH_INBOX + ", " + SCHEMA + "." + InboxSettings.DEFAULT_TABLE);
        String insert = "INSERT INTO " + (withInbox ? WITH_INBOX : PLAIN) + " (event_id, aggregate_id, payload) VALUES (?, ?, ?)";
        List<UUID> ids = new ArrayList<>(messages);
        for (int i = 0; i < messages; i++) {
            ids.add(UUID.randomUUID());
        }
        AtomicInteger next = new AtomicInteger();
        AtomicReference<Exception> failure = new AtomicReference<>();
        List<Thread> workers = new ArrayList<>();
        long start = System.nanoTime();
        for (int t = 0; t < threads; t++) {
            Thread worker = new Thread(() -> {
                try {
                    for (int i = next.getAndIncrement(); i < messages && failure.get() == null; i = next.getAndIncrement()) {
                        UUID id = ids.get(i);
                        String aggregate = "agg-" + (i % aggregates);
                        byte[] payload = Brokers.payload(i);
                        try (Connection connection = dataSource.getConnection()) {
                            connection.setAutoCommit(false);
                            if (withInbox) {
                                InboxOutcome outcome = inbox.process(connection, new InboxKey(CONSUMER, id),
                                        tx -> write(tx, insert, id, aggregate, payload));
                                if (outcome != InboxOutcome.PROCESSED) {
                                    throw new IllegalStateException("a fresh event was answered " + outcome);
                                }
                            } else {
                                write(connection, insert, id, aggregate, payload);
                            }
                            connection.commit();
                        }
                    }
                } catch (Exception e) {
                    failure.compareAndSet(null, e);
                }
            }, "bench-inbox-" + t);
            workers.add(worker);
            worker.start();
        }
        for (Thread worker : workers) {
            worker.join();
        }
        long nanos = System.nanoTime() - start;
        if (failure.get() != null) {
            throw failure.get();
        }
        long rows = db.count(withInbox ? WITH_INBOX : PLAIN, "true");
        if (rows != messages || (withInbox && db.count(SCHEMA + "." + InboxSettings.DEFAULT_TABLE, "true") != messages)) {
            throw new IllegalStateException("expected " + messages + " rows, found " + rows);
        }
        Map<String, Object> run = new LinkedHashMap<>();
        run.put("consumer", withInbox ? "inbox" : "plain");
        run.put("messagesPerSecond", Stats.round(messages / (nanos / 1e9), 0));
        // Wall time per message across the threads, as a consumer with that many threads sees its throughput.
        run.put("microsPerMessage", Stats.round(nanos / 1e3 / messages, 1));
        return run;
    }

    private static void write(Connection transaction, String insert, UUID id, String aggregate, byte[] payload)
            throws java.sql.SQLException {
        try (PreparedStatement statement = transaction.prepareStatement(insert)) {
            statement.setObject(1, id);
            statement.setString(2, aggregate);
            statement.setBytes(3, payload);
            statement.executeUpdate();
        }
    }
}
