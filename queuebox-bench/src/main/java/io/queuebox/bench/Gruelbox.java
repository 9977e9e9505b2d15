package io.queuebox.bench;

import com.gruelbox.transactionoutbox.DefaultPersistor;
import com.gruelbox.transactionoutbox.Dialect;
import com.gruelbox.transactionoutbox.Instantiator;
import com.gruelbox.transactionoutbox.Submitter;
import com.gruelbox.transactionoutbox.ThreadLocalContextTransactionManager;
import com.gruelbox.transactionoutbox.TransactionManager;
import com.gruelbox.transactionoutbox.TransactionOutbox;
import com.gruelbox.transactionoutbox.TransactionOutboxEntry;
import com.gruelbox.transactionoutbox.TransactionOutboxListener;
import com.rabbitmq.client.Channel;
import com.zaxxer.hikari.HikariDataSource;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * The peer gruelbox transaction-outbox (transactionoutbox-core 4.2.268, {@code DefaultPersistor} with
 * {@code Dialect.POSTGRESQL_9}, its own table {@code txno_outbox} created by its own migrations).
 *
 * <p>What it does per entry, as its source reads: the application's transaction inserts a row holding the
 * serialised invocation (JSON by gson) of {@link Sink#publish}; after commit the entry is handed to the
 * submitter's executor, which, in a transaction of its own, locks the row ({@code SELECT … FOR UPDATE SKIP
 * LOCKED} by id and version), calls the method and deletes the row. A flush (the background path, used here to
 * drain a backlog) selects up to {@code flushBatchSize} due rows {@code FOR UPDATE SKIP LOCKED}, pushes each back
 * with an {@code UPDATE} of its next attempt time, commits, then submits each; it also runs the delete of expired
 * idempotency records. So: four statements and two commits per entry, no ordering, and no broker confirm unless
 * the called method waits for one, which {@link Sink} does when it publishes (RabbitMQ: a confirm per message;
 * Kafka: {@code send().get()}); with the sink {@code none} the method does nothing.
 */
final class Gruelbox {

    /** The scheduled interface: gruelbox serialises a call to it and replays the call after commit. */
    public interface Sink {
        void publish(String eventId, String aggregateId, String payload) throws Exception;
    }

    private static final String TABLE = "txno_outbox";

    private final BenchDatabase db;
    private final Brokers brokers;
    private final PrintStream out;

    Gruelbox(BenchDatabase db, Brokers brokers, PrintStream out) {
        this.db = db;
        this.brokers = brokers;
        this.out = out;
    }

    /** What the scheduled method does: nothing, or publish with a synchronous broker acknowledgement. */
    private static final class BrokerSink implements Sink, AutoCloseable {
        private final String broker;
        private final Brokers brokers;
        private final ThreadLocal<Channel> channels = new ThreadLocal<>();
        private final List<Channel> opened = new CopyOnWriteArrayList<>();
        private final KafkaProducer<String, byte[]> producer;

        BrokerSink(String broker, Brokers brokers) {
            this.broker = broker;
            this.brokers = brokers;
            this.producer = broker.equals("kafka") ? brokers.kafkaProducer() : null;
        }

        @Override
        public void publish(String eventId, String aggregateId, String payload) throws Exception {
            byte[] body = payload.getBytes(StandardCharsets.UTF_8);
            switch (broker) {
                case "none" -> { }
                case "kafka" -> producer.send(new ProducerRecord<>(Brokers.TOPIC, aggregateId, body)).get(30, TimeUnit.SECONDS);
                case "rabbitmq" -> {
                    Channel channel = channels.get();
                    if (channel == null) {
                        channel = brokers.newChannel();
                        channel.confirmSelect();
                        channels.set(channel);
                        opened.add(channel);
                    }
                    channel.basicPublish(Brokers.EXCHANGE, "order.BenchEvent", false, Brokers.peerProperties(eventId), body);
                    channel.waitForConfirmsOrDie(30_000);
                }
                default -> throw new IllegalArgumentException("unknown broker " + broker);
            }
        }

        @Override
        public void close() {
            for (Channel channel : opened) {
                try {
                    channel.close();
                } catch (Exception ignored) {
                    // closing after the run; nothing left to confirm
                }
            }
            if (producer != null) {
                producer.close();
            }
        }
    }

    /** One gruelbox outbox on its own pool and executor. */
    private final class Instance implements AutoCloseable {
        final HikariDataSource pool;
        final ThreadLocalContextTransactionManager tm;
        final ThreadPoolExecutor executor;
        final BrokerSink sink;
        final TransactionOutbox outbox;
        final AtomicLong succeeded = new AtomicLong();
        final AtomicLong failed = new AtomicLong();
        final AtomicReference<Throwable> lastFailure = new AtomicReference<>();

        Instance(String broker, int threads, int batch, int extraConnections) {
            pool = db.newPool("gruelbox", threads + extraConnections + 2);
            tm = TransactionManager.fromDataSource(pool);
            AtomicInteger n = new AtomicInteger();
            executor = new ThreadPoolExecutor(threads, threads, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(),
                    r -> new Thread(r, "gruelbox-worker-" + n.incrementAndGet()));
            sink = new BrokerSink(broker, brokers);
            outbox = TransactionOutbox.builder()
                    .transactionManager(tm)
                    .persistor(DefaultPersistor.builder().dialect(Dialect.POSTGRESQL_9).build())
                    .instantiator(Instantiator.using(type -> sink))
                    .submitter(Submitter.withExecutor(executor))
                    .flushBatchSize(batch)
                    // Long enough that a flushed entry is not flushed again while it waits in the executor's queue.
                    .attemptFrequency(Duration.ofMinutes(5))
                    .serializeMdc(false)
                    .listener(new TransactionOutboxListener() {
                        @Override
                        public void success(TransactionOutboxEntry entry) {
                            succeeded.incrementAndGet();
                        }

                        @Override
                        public void failure(TransactionOutboxEntry entry, Throwable cause) {
                            failed.incrementAndGet();
                            lastFailure.set(cause);
                        }
                    })
                    .build();
        }

        @Override
        public void close() throws Exception {
            executor.shutdown();
            executor.awaitTermination(30, TimeUnit.SECONDS);
            sink.close();
            pool.close();
        }
    }

    /**
     * Drains {@code rows} pending entries with {@code threads} executor threads: one thread calls {@code flush()}
     * (batch {@code batch}) whenever fewer than {@code batch} entries wait in the executor's queue.
     */
    Run drain(String broker, int threads, int batch, int rows, int aggregates) throws Exception {
        try (Instance gruelbox = new Instance(broker, threads, batch, 1)) {
            fill(gruelbox, rows, aggregates);
            Cpu cpu = Cpu.start();
            long start = System.nanoTime();
            long deadline = start + Duration.ofSeconds(Math.max(120, rows / 100)).toNanos();
            long flushes = 0;
            while (gruelbox.succeeded.get() < rows && System.nanoTime() < deadline) {
                if (gruelbox.failed.get() > 0) {
                    throw new IllegalStateException("gruelbox (" + broker + ") failed an entry", gruelbox.lastFailure.get());
                }
                if (gruelbox.executor.getQueue().size() < batch) {
                    flushes++;
                    if (!gruelbox.outbox.flush()) {
                        Thread.sleep(2);
                    }
                } else {
                    Thread.sleep(1);
                }
            }
            double seconds = Brokers.seconds(start);
            Run run = Run.of(rows, seconds, cpu, String.format(Locale.ROOT, "%d flushes", flushes));
            long left = db.count(TABLE, "true");
            if (gruelbox.succeeded.get() < rows || left != 0) {
                throw new IllegalStateException("gruelbox (" + broker + ") processed " + gruelbox.succeeded.get() + " of "
                        + rows + " entries in time, " + left + " rows left; failures " + gruelbox.failed.get(),
                        gruelbox.lastFailure.get());
            }
            if (broker.equals("rabbitmq")) {
                brokers.purgeQueue();
            }
            return run;
        }
    }

    /**
     * {@code rows} due entries over {@code aggregates} aggregates, as gruelbox itself writes them: one call to
     * {@link Sink#publish} is scheduled through gruelbox (its serialiser, its insert), and its row is the template
     * that SQL copies {@code rows} times with fresh ids, the same 216-byte payload as the relay's and a due time
     * a second ago. Row by row through {@code schedule} would take minutes for a large backlog.
     */
    private void fill(Instance gruelbox, int rows, int aggregates) throws Exception {
        db.execute("TRUNCATE " + TABLE);
        String payload = new String(Brokers.payload(0), StandardCharsets.UTF_8).replace("\"n\":0", "\"n\":@N@");
        TransactionOutbox template = TransactionOutbox.builder().transactionManager(gruelbox.tm)
                .persistor(DefaultPersistor.builder().dialect(Dialect.POSTGRESQL_9).build())
                .instantiator(Instantiator.using(type -> gruelbox.sink))
                .submitter((entry, localExecutor) -> { }) // leave it pending
                .serializeMdc(false)
                .build();
        gruelbox.tm.inTransactionThrows(tx -> template.schedule(Sink.class).publish("@ID@", "@AGG@", payload));
        try (Connection c = gruelbox.pool.getConnection()) {
            String invocation;
            int version;
            try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT invocation, version FROM " + TABLE)) {
                if (!rs.next()) {
                    throw new IllegalStateException("gruelbox wrote no template row");
                }
                invocation = rs.getString(1);
                version = rs.getInt(2);
            }
            if (!invocation.contains("@ID@") || !invocation.contains("@AGG@") || !invocation.contains("@N@")) {
                throw new IllegalStateException("unexpected gruelbox invocation: " + invocation);
            }
            try (Statement st = c.createStatement()) {
                st.execute("TRUNCATE " + TABLE);
            }
            try (PreparedStatement insert = c.prepareStatement("INSERT INTO " + TABLE
                    + " (id, uniqueRequestId, invocation, lastAttemptTime, nextAttemptTime, attempts, blocked, processed, version)"
                    + " SELECT u::text, NULL, replace(replace(replace(?, '@ID@', e::text), '@AGG@', 'agg-' || (g % ?)), '@N@', g::text),"
                    + " NULL, ?, 0, false, false, ?"
                    + " FROM (SELECT g, gen_random_uuid() AS u, gen_random_uuid() AS e FROM generate_series(1, ?) g) s")) {
                insert.setString(1, invocation);
                insert.setInt(2, aggregates);
                insert.setTimestamp(3, Timestamp.from(Instant.now().minusSeconds(1)));
                insert.setInt(4, version);
                insert.setInt(5, rows);
                insert.executeUpdate();
            }
            try (Statement st = c.createStatement()) {
                st.execute("ANALYZE " + TABLE);
            }
        }
    }

    /**
     * The immediate path at each rate: producers schedule one {@link Sink#publish} per transaction through gruelbox;
     * after commit gruelbox runs it on its executor ({@code threads} threads), which publishes to RabbitMQ and waits
     * for the confirm; the bench's consumer measures commit → consume, as for QueueBox. No flush runs: the
     * background path only retries after the attempt frequency.
     */
    Map<String, Object> latency(int threads, int[] rates, java.time.Duration warmup, java.time.Duration measure) throws Exception {
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("mode", "gruelbox");
        result.put("system", "gruelbox immediate (" + threads + " threads, RabbitMQ confirm per entry)");
        brokers.purgeQueue();
        Map<String, Long> consumed = new ConcurrentHashMap<>();
        Channel consumer = brokers.consume((id, headers) -> consumed.putIfAbsent(id, System.nanoTime()));
        try (Instance gruelbox = new Instance("rabbitmq", threads, 500, 8)) {
            db.execute("TRUNCATE " + TABLE);
            String payloadTail = new String(Brokers.payload(0), StandardCharsets.UTF_8);
            Steady.Producer producer = () -> new Steady.Session() {
                @Override
                public void commitOne(long index, Steady.Committed committed) throws Exception {
                    String id = UUID.randomUUID().toString();
                    String aggregate = "agg-" + ThreadLocalRandom.current().nextInt(1000);
                    gruelbox.tm.inTransactionThrows(tx -> {
                        // Registered before gruelbox's own hook, so it runs first, right after the commit.
                        tx.addPostCommitHook(() -> committed.at(id, System.nanoTime()));
                        gruelbox.outbox.schedule(Sink.class).publish(id, aggregate,
                                payloadTail.replace("\"n\":0", "\"n\":" + index));
                    });
                }

                @Override
                public void close() {
                }
            };
            List<Map<String, Object>> steady = new ArrayList<>();
            for (int rate : rates) {
                // Asked when events are still unseen at the end of the 10 s window: gruelbox deletes what it processed.
                java.util.function.Supplier<String> diagnostic = () -> {
                    String left;
                    try {
                        left = "gruelbox entries left=" + db.count(TABLE, "true");
                    } catch (java.sql.SQLException e) {
                        left = "gruelbox entries unknown (" + e.getMessage() + ")";
                    }
                    return left + "; " + brokers.rabbitDiagnostic();
                };
                steady.add(Steady.run("gruelbox", rate, warmup, measure, producer, Map.of("consumed", consumed), out,
                        diagnostic, Steady.WINDOW, Steady.EXTENDED_WAIT).get("consumed"));
                if (gruelbox.failed.get() > 0) {
                    throw new IllegalStateException("gruelbox failed " + gruelbox.failed.get() + " entries", gruelbox.lastFailure.get());
                }
            }
            result.put("steady", steady);
            return result;
        } finally {
            consumer.close();
            db.execute("TRUNCATE " + TABLE);
            brokers.purgeQueue();
        }
    }
}
