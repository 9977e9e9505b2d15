package io.queuebox.demo;

import io.queuebox.embed.config.Databases;
import io.queuebox.jdbc.OutboxDatabase;
import io.queuebox.jdbc.OutboxTable;
import java.util.OptionalInt;
import io.queuebox.embed.config.ConfigLoader;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.bootstrap.internal.Logging;
import io.queuebox.embed.internal.Migrations;
import io.queuebox.bootstrap.internal.Relay;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.OutboxWriter;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * One demo run: the servers, the application that writes orders, the relay (the same wiring as
 * {@code queuebox run}), a consumer, and the line printed every second.
 */
final class DemoRun implements AutoCloseable {

    private static final String TOPIC = "outbox.event.order";

    private final PrintWriter out;
    private final List<AutoCloseable> resources = new ArrayList<>();
    private final ScheduledExecutorService threads = Executors.newScheduledThreadPool(3, runnable -> {
        Thread thread = new Thread(runnable, "queuebox-demo");
        thread.setDaemon(true);
        return thread;
    });
    private final AtomicBoolean stopping = new AtomicBoolean();
    private final Map<UUID, Long> committedAtNanos = new ConcurrentHashMap<>();
    private final List<Long> windowLatenciesMicros = Collections.synchronizedList(new ArrayList<>());
    private final AtomicLong written = new AtomicLong();
    private final AtomicLong delivered = new AtomicLong();
    private final long startNanos = System.nanoTime();
    private OutboxWriter<Connection> outbox;
    private DataSource database;
    private OutboxStore store;
    private Connection writerConnection;
    private Relay relay;

    private DemoRun(PrintWriter out) {
        this.out = out;
    }

    static DemoRun start(Path directory, int rate, boolean capture, PrintWriter out) throws Exception {
        DemoRun run = new DemoRun(out);
        try {
            run.startAll(directory, rate, capture);
            return run;
        } catch (Exception | Error e) {
            run.close();
            throw e;
        }
    }

    private void startAll(Path directory, int rate, boolean capture) throws Exception {
        Logging.configure("text", "WARN");
        // The embedded servers log their every step; the demo's own lines are the ones to read.
        ((ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME))
                .setLevel(ch.qos.logback.classic.Level.WARN);
        // Both servers start at once: together they are most of the demo's start-up time.
        long t = System.nanoTime();
        CompletableFuture<EmbeddedKafka> kafkaStarting = CompletableFuture.supplyAsync(
                () -> EmbeddedKafka.start(directory.resolve("kafka")));
        // The binaries unpack once into the system temp directory (embedded-pg) and are reused by later runs;
        // the database itself lives in the demo's directory and goes with it.
        EmbeddedPostgres postgres;
        try {
            postgres = EmbeddedPostgres.builder()
                    .setDataDirectory(directory.resolve("postgres-data"))
                    .setCleanDataDirectory(true)
                    .setRegisterShutdownHook(false)
                    .setServerConfig("wal_level", "logical")
                    .setServerConfig("max_wal_senders", "4")
                    .setServerConfig("max_replication_slots", "4")
                    .setOutputRedirector(ProcessBuilder.Redirect.DISCARD)
                    .setErrorRedirector(ProcessBuilder.Redirect.DISCARD)
                    .start();
        } catch (IOException | RuntimeException e) {
            kafkaStarting.thenAccept(DemoRun::closeQuietly);
            throw e;
        }
        resources.add(postgres);
        database = postgres.getPostgresDatabase();
        OutboxDatabase tables = Databases.forUrl(postgres.getJdbcUrl("postgres", "postgres")).orElseThrow()
                .open(database, new OutboxTable("public", "queuebox_outbox", false, OptionalInt.empty()));
        store = tables.store();
        outbox = tables.writer();
        say("PostgreSQL (embedded, wal_level=logical) on port %d, started in %d ms", postgres.getPort(), millisSince(t));
        EmbeddedKafka kafka = kafkaStarting.join();
        resources.add(kafka);
        kafka.createTopic(TOPIC, 3);
        say("Kafka (in-process, KRaft) at %s, ready after %d ms", kafka.bootstrapServers(), millisSince(t));

        QueueBoxConfig config = config(postgres.getPort(), kafka.bootstrapServers(), directory, capture);
        Migrations.migrate(database, config);
        try (Connection c = database.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE IF NOT EXISTS demo_orders (id uuid PRIMARY KEY, customer text NOT NULL,"
                    + " total numeric(10,2) NOT NULL, created_at timestamptz NOT NULL DEFAULT now())");
            if (capture) {
                // The publication is the user's to create; the demo plays the user here.
                // Inserts only (the lease and mark-sent updates would be decoded only to be dropped), and only the
                // event id where PostgreSQL has column lists: capture reads nothing else of a row.
                st.execute("CREATE PUBLICATION queuebox_demo FOR TABLE public.queuebox_outbox"
                        + (c.getMetaData().getDatabaseMajorVersion() >= 15 ? " (event_id)" : "") + " WITH (publish = 'insert')");
            }
        }
        say("schema migrated (queuebox_outbox, queuebox_capture_state) and demo_orders created");

        t = System.nanoTime();
        relay = Relay.start(config);
        resources.add(relay);
        say("relay started in %d ms: %s, metrics and health on http://127.0.0.1:%d/metrics",
                millisSince(t), capture ? "capture mode postgres-logical (wakes on each insert)"
                        : "polling every 200 ms", relay.httpPort());

        writerConnection = database.getConnection();
        writerConnection.setAutoCommit(false);
        resources.add(1, writerConnection);
        KafkaConsumer<String, byte[]> consumer = consumer(kafka.bootstrapServers());
        threads.execute(() -> consume(consumer));
        long periodMicros = Math.max(1, 1_000_000L / rate);
        threads.scheduleAtFixedRate(this::writeOrder, 0, periodMicros, TimeUnit.MICROSECONDS);
        threads.scheduleAtFixedRate(this::report, 1, 1, TimeUnit.SECONDS);
        say("writing %d orders/s, each with its OrderPlaced event in the same transaction; Ctrl-C stops", rate);
    }

    private QueueBoxConfig config(int port, String kafkaBootstrap, Path directory, boolean capture) {
        Map<String, String> values = new LinkedHashMap<>();
        values.put("database.url", "jdbc:postgresql://127.0.0.1:" + port + "/postgres");
        values.put("database.username", "postgres");
        values.put("broker.type", "kafka");
        values.put("broker.kafka.bootstrap.servers", kafkaBootstrap);
        values.put("http.port", "0");
        values.put("http.host", "127.0.0.1");
        values.put("instance.name", "queuebox-demo");
        values.put("outbox.pollIntervalMs", "200");
        values.put("log.level", "WARN");
        if (capture) {
            values.put("outbox.capture.enabled", "true");
            values.put("outbox.capture.mode", "postgres-logical");
            values.put("outbox.capture.slot", "queuebox_demo");
            values.put("outbox.capture.publication", "queuebox_demo");
            values.put("outbox.capture.stateDirectory", directory.resolve("capture").toString());
            values.put("outbox.capture.reconciliationIntervalMs", "5000");
            values.put("outbox.capture.pollIntervalMs", "10");
        }
        return new ConfigLoader().withoutFile().values(values).load();
    }

    private void writeOrder() {
        if (stopping.get()) {
            return;
        }
        UUID orderId = UUID.randomUUID();
        String payload = "{\"orderId\":\"" + orderId + "\",\"customer\":\"demo\",\"total\":42.00}";
        OutboxEvent event = OutboxEvent.of("order", orderId.toString(), "OrderPlaced",
                payload.getBytes(StandardCharsets.UTF_8));
        Connection c = writerConnection;
        try {
            try (PreparedStatement insert = c.prepareStatement(
                    "INSERT INTO demo_orders (id, customer, total) VALUES (?, 'demo', 42.00)")) {
                insert.setObject(1, orderId);
                insert.executeUpdate();
            }
            outbox.enqueue(c, event);
            c.commit();
            committedAtNanos.put(event.eventId(), System.nanoTime());
            written.incrementAndGet();
        } catch (SQLException | RuntimeException e) {
            rollbackQuietly(c);
            if (!stopping.get()) {
                say("write failed: %s", e.getMessage());
            }
        }
    }

    private static void closeQuietly(AutoCloseable resource) {
        try {
            resource.close();
        } catch (Exception ignored) {
            // Start-up already failed; this is cleanup.
        }
    }

    private static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException ignored) {
            // The connection is gone; the next write reports it.
        }
    }

    private static KafkaConsumer<String, byte[]> consumer(String bootstrap) {
        Map<String, Object> props = new LinkedHashMap<>();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, "queuebox-demo");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "1000");
        return new KafkaConsumer<>(props);
    }

    private void consume(KafkaConsumer<String, byte[]> consumer) {
        try (consumer) {
            consumer.subscribe(List.of(TOPIC));
            while (!stopping.get()) {
                for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofMillis(100))) {
                    long now = System.nanoTime();
                    Header id = record.headers().lastHeader("event-id");
                    Long committed = id == null ? null
                            : committedAtNanos.remove(UUID.fromString(new String(id.value(), StandardCharsets.UTF_8)));
                    if (committed != null) {
                        delivered.incrementAndGet();
                        windowLatenciesMicros.add((now - committed) / 1000);
                    }
                }
            }
        } catch (RuntimeException e) {
            if (!stopping.get()) {
                say("consumer stopped: %s", e);
            }
        }
    }

    private void report() {
        List<Long> window;
        synchronized (windowLatenciesMicros) {
            window = new ArrayList<>(windowLatenciesMicros);
            windowLatenciesMicros.clear();
        }
        Collections.sort(window);
        long backlog;
        try {
            backlog = store.stats().pending();
        } catch (RuntimeException e) {
            backlog = -1;
        }
        say("t=%3ds written=%d delivered=%d backlog=%d commit->consume p50=%s p99=%s",
                millisSince(startNanos) / 1000, written.get(), delivered.get(), backlog,
                percentile(window, 0.50), percentile(window, 0.99));
    }

    private static String percentile(List<Long> sortedMicros, double quantile) {
        if (sortedMicros.isEmpty()) {
            return "-";
        }
        long micros = sortedMicros.get(Math.min(sortedMicros.size() - 1, (int) Math.ceil(quantile * sortedMicros.size()) - 1));
        return String.format("%.1fms", micros / 1000.0);
    }

    private void say(String format, Object... args) {
        synchronized (out) {
            out.println(String.format(format, args));
            out.flush();
        }
    }

    private static long millisSince(long startNanos) {
        return Duration.ofNanos(System.nanoTime() - startNanos).toMillis();
    }

    @Override
    public void close() throws Exception {
        stopping.set(true);
        threads.shutdown();
        threads.awaitTermination(5, TimeUnit.SECONDS);
        for (int i = resources.size() - 1; i >= 0; i--) {
            try {
                resources.get(i).close();
            } catch (Exception e) {
                say("closing %s failed: %s", resources.get(i).getClass().getSimpleName(), e.getMessage());
            }
        }
        say("written=%d delivered=%d in %d s", written.get(), delivered.get(), millisSince(startNanos) / 1000);
    }
}
