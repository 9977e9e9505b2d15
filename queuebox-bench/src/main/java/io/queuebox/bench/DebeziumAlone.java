package io.queuebox.bench;

import com.rabbitmq.client.Channel;
import io.debezium.embedded.Connect;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.debezium.engine.format.ChangeEventFormat;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * The floor of capture latency: an embedded Debezium PostgreSQL connector and nothing of QueueBox. Same poll
 * interval as QueueBox's capture (20 ms), pgoutput, {@code snapshot.mode=no_data}, offsets in a file flushed every 5 s (as QueueBox's), on a table of
 * the outbox's shape ({@code bench_capture}) published {@code WITH (publish = 'insert')}. Producers commit one
 * plain INSERT per transaction (the outbox's columns, no QueueBox writer, no insert trigger).
 *
 * <p>Two cells: Debezium's default {@code max.batch.size} (2,048: a poll of its queue waits out the poll interval
 * unless that many records came), what a user of Debezium alone runs; and {@code max.batch.size=1}, the setting
 * QueueBox's capture reads the log with, so that the comparison also shows what the setting alone is worth.
 *
 * <p>Two observations per event: when the change event reaches the batch handler ({@code received}: commit →
 * change event, the floor), and, because the handler then publishes each event to RabbitMQ (persistent, the event
 * id as message id) and waits for the confirms of the batch before it marks the batch processed, when the bench's
 * consumer gets it ({@code consumed}: commit → consume, the same end point as the relay's latency).
 */
final class DebeziumAlone {

    static final String TABLE = "bench_capture";
    static final String PUBLICATION = "bench_debezium_pub";
    static final String SLOT = "bench_debezium_slot";

    private final BenchDatabase db;
    private final Brokers brokers;
    private final PrintStream out;
    private final Integer maxBatchSize;
    private final String system;

    /** {@code maxBatchSize}: Debezium's {@code max.batch.size}, or null for its default. */
    DebeziumAlone(BenchDatabase db, Brokers brokers, PrintStream out, Integer maxBatchSize) {
        this.db = db;
        this.brokers = brokers;
        this.out = out;
        this.maxBatchSize = maxBatchSize;
        this.system = maxBatchSize == null ? "Debezium alone" : "Debezium alone, max.batch.size " + maxBatchSize;
    }

    Map<String, Object> run(int[] rates, Duration warmup, Duration measure) throws Exception {
        db.createOutboxShapedTable(TABLE);
        db.execute("TRUNCATE " + TABLE);
        db.dropSlot(SLOT);
        db.execute("DROP PUBLICATION IF EXISTS " + PUBLICATION);
        db.execute("CREATE PUBLICATION " + PUBLICATION + " FOR TABLE public." + TABLE + " WITH (publish = 'insert')");
        brokers.purgeQueue();
        Map<String, Long> received = new ConcurrentHashMap<>();
        Map<String, Long> consumed = new ConcurrentHashMap<>();
        Channel consumer = brokers.consume((id, headers) -> consumed.putIfAbsent(id, System.nanoTime()));
        java.nio.file.Path stateDir = java.nio.file.Files.createTempDirectory("queuebox-bench-debezium-");
        java.nio.file.Path offsets = stateDir.resolve("offsets.dat");
        Channel publisher = brokers.newChannel();
        publisher.confirmSelect();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch started = new CountDownLatch(1);
        DebeziumEngine<RecordChangeEvent<SourceRecord>> engine = DebeziumEngine.create(ChangeEventFormat.of(Connect.class))
                .using(properties(offsets))
                .notifying((records, committer) -> {
                    List<String> ids = new ArrayList<>(records.size());
                    for (RecordChangeEvent<SourceRecord> event : records) {
                        long at = System.nanoTime();
                        if (event.record().value() instanceof Struct value && value.schema().field("after") != null
                                && value.getStruct("after") != null) {
                            Struct after = value.getStruct("after");
                            String id = after.get("event_id").toString();
                            received.putIfAbsent(id, at);
                            ids.add(id);
                            try {
                                publisher.basicPublish(Brokers.EXCHANGE, "order.BenchEvent", false,
                                        Brokers.peerProperties(id), bytes(after.get("payload")));
                            } catch (java.io.IOException e) {
                                failure.compareAndSet(null, e);
                                throw new InterruptedException("publish failed: " + e);
                            }
                        }
                    }
                    if (!ids.isEmpty()) {
                        try {
                            publisher.waitForConfirmsOrDie(30_000);
                        } catch (java.io.IOException | java.util.concurrent.TimeoutException e) {
                            failure.compareAndSet(null, e);
                            throw new InterruptedException("confirm failed: " + e);
                        }
                    }
                    for (RecordChangeEvent<SourceRecord> event : records) {
                        committer.markProcessed(event);
                    }
                    committer.markBatchFinished();
                })
                .using(new DebeziumEngine.ConnectorCallback() {
                    @Override
                    public void taskStarted() {
                        started.countDown();
                    }
                })
                .using((success, message, error) -> {
                    if (!success) {
                        failure.compareAndSet(null, error != null ? error : new IllegalStateException(message));
                    }
                    started.countDown();
                })
                .build();
        ExecutorService executor = Executors.newSingleThreadExecutor(r -> new Thread(r, "debezium-alone"));
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("mode", "debezium");
        result.put("system", system);
        result.put("capturePollMs", Latency.CAPTURE_POLL.toMillis());
        try {
            executor.execute(engine);
            awaitStreaming(started, received, failure);
            received.clear();
            consumed.clear();
            List<Map<String, Object>> receivedRows = new ArrayList<>();
            List<Map<String, Object>> consumedRows = new ArrayList<>();
            for (int rate : rates) {
                Map<String, Map<String, Long>> observers = new LinkedHashMap<>();
                observers.put("received", received);
                observers.put("consumed", consumed);
                Map<String, Map<String, Object>> rows = Steady.run(system, rate, warmup, measure, this::session,
                        observers, out, brokers::rabbitDiagnostic, Steady.WINDOW, Steady.EXTENDED_WAIT);
                if (failure.get() != null) {
                    throw new IllegalStateException(system + " failed", failure.get());
                }
                receivedRows.add(rows.get("received"));
                consumedRows.add(rows.get("consumed"));
            }
            result.put("steady", receivedRows);
            result.put("steadyConsumed", consumedRows);
            return result;
        } finally {
            engine.close();
            executor.shutdown();
            executor.awaitTermination(30, TimeUnit.SECONDS);
            consumer.close();
            try {
                publisher.close();
            } catch (Exception ignored) {
                // the connection stays; a channel already closed by an error is fine
            }
            db.dropSlot(SLOT);
            db.execute("DROP PUBLICATION IF EXISTS " + PUBLICATION);
            db.execute("TRUNCATE " + TABLE);
            java.nio.file.Files.deleteIfExists(offsets);
            java.nio.file.Files.deleteIfExists(stateDir);
            brokers.purgeQueue();
        }
    }

    private Properties properties(java.nio.file.Path offsets) {
        Properties props = new Properties();
        props.setProperty("name", "bench-debezium-alone");
        props.setProperty("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
        props.setProperty("plugin.name", "pgoutput");
        props.setProperty("database.hostname", db.host);
        props.setProperty("database.port", Integer.toString(db.port));
        props.setProperty("database.dbname", db.database);
        props.setProperty("database.user", db.user);
        props.setProperty("database.password", "");
        props.setProperty("slot.name", SLOT);
        props.setProperty("publication.name", PUBLICATION);
        props.setProperty("publication.autocreate.mode", "disabled");
        props.setProperty("slot.drop.on.stop", "true");
        props.setProperty("snapshot.mode", "no_data");
        props.setProperty("poll.interval.ms", Long.toString(Latency.CAPTURE_POLL.toMillis()));
        props.setProperty("topic.prefix", "bench");
        props.setProperty("table.include.list", "public." + TABLE);
        props.setProperty("skipped.operations", "u,d,t");
        props.setProperty("tombstones.on.delete", "false");
        // As QueueBox's capture keeps them (Kafka 4's MemoryOffsetBackingStore is abstract).
        props.setProperty("offset.storage", "org.apache.kafka.connect.storage.FileOffsetBackingStore");
        props.setProperty("offset.storage.file.filename", offsets.toString());
        props.setProperty("offset.flush.interval.ms", "5000");
        props.setProperty("errors.max.retries", "0");
        if (maxBatchSize != null) {
            props.setProperty("max.batch.size", Integer.toString(maxBatchSize));
        }
        return props;
    }

    /** Commits probe rows until one comes through: the slot exists and the connector streams. */
    private void awaitStreaming(CountDownLatch started, Map<String, Long> received, AtomicReference<Throwable> failure)
            throws Exception {
        if (!started.await(90, TimeUnit.SECONDS) || failure.get() != null) {
            throw new IllegalStateException("Debezium alone did not start", failure.get());
        }
        PlainInserts.awaitAProbeSeen(db, TABLE, received, failure, "Debezium alone", Duration.ofSeconds(90));
    }

    private Steady.Session session() throws Exception {
        return PlainInserts.session(db, TABLE);
    }

    private static byte[] bytes(Object value) {
        if (value instanceof byte[] bytes) {
            return bytes;
        }
        if (value instanceof ByteBuffer buffer) {
            byte[] bytes = new byte[buffer.remaining()];
            buffer.duplicate().get(bytes);
            return bytes;
        }
        return new byte[0];
    }
}
