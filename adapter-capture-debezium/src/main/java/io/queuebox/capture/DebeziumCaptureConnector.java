package io.queuebox.capture;

import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.debezium.engine.format.ChangeEventFormat;
import io.debezium.embedded.Connect;
import io.queuebox.ports.CaptureConnector;
import io.queuebox.ports.WakeReason;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** One run of the Debezium embedded engine; it reads change events and only wakes delivery. */
final class DebeziumCaptureConnector implements CaptureConnector {

    private static final Logger LOG = LoggerFactory.getLogger(DebeziumCaptureConnector.class);
    private static final String EVENT_ID = "event_id";

    private final Properties properties;
    private final String outboxTopic;
    private final CaptureCounters counters;
    private final AtomicBoolean closing = new AtomicBoolean();
    private final AtomicBoolean started = new AtomicBoolean();
    private final ExecutorService executor;
    private volatile DebeziumEngine<RecordChangeEvent<SourceRecord>> engine;

    DebeziumCaptureConnector(Properties properties, String outboxTopic, CaptureCounters counters, String threadName) {
        this.properties = properties;
        this.outboxTopic = outboxTopic;
        this.counters = counters;
        this.executor = Executors.newSingleThreadExecutor(runnable -> {
            Thread thread = new Thread(runnable, threadName);
            thread.setDaemon(true);
            return thread;
        });
    }

    @Override
    public void start(Events events) {
        if (!started.compareAndSet(false, true)) {
            throw new IllegalStateException("a capture connector runs once; create a new one to restart");
        }
        AtomicBoolean reported = new AtomicBoolean();
        engine = DebeziumEngine.create(ChangeEventFormat.of(Connect.class))
                .using(properties)
                .notifying((batch, committer) -> onBatch(batch, committer, events))
                .using(new DebeziumEngine.ConnectorCallback() {
                    // The slot exists from here on: rows committed before it are not in the stream, so
                    // delivery looks at the table once more now instead of at the next reconciliation.
                    @Override
                    public void taskStarted() {
                        events.wake(WakeReason.CAPTURE_RESTART);
                    }
                })
                .using((success, message, error) -> {
                    if (closing.get() || !reported.compareAndSet(false, true)) {
                        return;
                    }
                    Throwable cause = error != null ? error
                            : new IllegalStateException("capture connector stopped: " + message);
                    LOG.warn("Capture connector stopped: {}", message, error);
                    events.failed(cause);
                })
                .build();
        executor.execute(engine);
    }

    /**
     * One wake-up per poll of the log, naming every inserted row in it: a poll that holds several rows (SQL Server's,
     * or a larger {@code max.batch.size}) would otherwise wake a second worker for the second row before the first
     * row's worker has started its claim, and that claim finds the rows taken. On PostgreSQL a poll holds one record
     * (PostgresLogicalDialect). The wake-up comes before the offsets are marked: a crash in between reports the rows
     * again (a spurious wake-up), never loses one.
     */
    private void onBatch(List<RecordChangeEvent<SourceRecord>> batch,
            DebeziumEngine.RecordCommitter<RecordChangeEvent<SourceRecord>> committer, Events events)
            throws InterruptedException {
        List<UUID> named = new ArrayList<>();
        boolean unnamed = false;
        for (RecordChangeEvent<SourceRecord> event : batch) {
            SourceRecord record = event.record();
            if (!outboxTopic.equals(record.topic())) {
                continue; // heartbeats and transaction metadata
            }
            if (!isInsertOrSnapshot(record)) {
                counters.ignoredEvents.increment();
                continue;
            }
            counters.wakeEvents.increment();
            counters.markEvent();
            UUID eventId = eventIdOf(record);
            if (eventId == null) {
                unnamed = true;
            } else {
                named.add(eventId);
            }
        }
        if (unnamed) {
            events.wake(WakeReason.CAPTURE);
        } else if (!named.isEmpty()) {
            events.wakeFor(WakeReason.CAPTURE, named);
        }
        for (RecordChangeEvent<SourceRecord> event : batch) {
            committer.markProcessed(event);
        }
        committer.markBatchFinished();
    }

    /**
     * The inserted row's {@code event_id} (PostgreSQL's uuid and SQL Server's uniqueidentifier both arrive as
     * text), or null when the record does not carry a readable one: then the wake-up names no row.
     */
    static UUID eventIdOf(SourceRecord record) {
        if (!(record.value() instanceof Struct value) || value.schema().field("after") == null
                || !(value.get("after") instanceof Struct after) || after.schema().field(EVENT_ID) == null
                || !(after.get(EVENT_ID) instanceof String text)) {
            return null;
        }
        try {
            return UUID.fromString(text.trim());
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    /** Only a new row can create work; updates, deletes and tombstones are QueueBox's own state changes. */
    static boolean isInsertOrSnapshot(SourceRecord record) {
        if (!(record.value() instanceof Struct value)) {
            return false; // tombstone
        }
        if (value.schema().field("op") == null) {
            return false;
        }
        String op = value.getString("op");
        return "c".equals(op) || "r".equals(op);
    }

    @Override
    public void close() {
        if (!closing.compareAndSet(false, true)) {
            return;
        }
        DebeziumEngine<RecordChangeEvent<SourceRecord>> running = engine;
        if (running != null) {
            try {
                running.close();
            } catch (IOException | IllegalStateException e) {
                // IllegalStateException: the engine already stopped by itself after a failure.
                LOG.debug("Closing the capture connector: {}", e.toString());
            }
        }
        executor.shutdown();
        try {
            if (!executor.awaitTermination(30, TimeUnit.SECONDS)) {
                executor.shutdownNow();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            executor.shutdownNow();
        }
    }
}
