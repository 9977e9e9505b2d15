package io.queuebox.reliability;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;

/**
 * One scenario's run: its own database and consumer, the relays it starts, the producer, and the verdict
 * over what the consumer received.
 */
final class Trial implements AutoCloseable {

    final Bed bed;
    final String name;
    final String database;
    final String broker;
    final Receipts receipts = new Receipts();
    final List<RelayProcess> relays = new ArrayList<>();
    final List<String> failures = new ArrayList<>();
    final Map<String, Object> notes = new TreeMap<>();
    private final List<AutoCloseable> closeables = new ArrayList<>();
    private RabbitConsumer rabbit;
    private KafkaConsumerLoop kafka;
    private Producer producer;
    private long faultEnd = Long.MAX_VALUE;
    private int started;

    /** {@code broker} is {@code rabbitmq} or {@code kafka}. */
    Trial(Bed bed, String name, String broker) throws Exception {
        this.bed = bed;
        this.name = name;
        this.broker = broker;
        this.database = bed.freshDatabase(name);
        if (broker.equals("rabbitmq")) {
            rabbit = new RabbitConsumer(bed.rabbitUri(Bed.RABBIT_PORT), name.replace('-', '_'), receipts);
        } else {
            kafka = new KafkaConsumerLoop(bed.kafka().bootstrap(), "qb-rel-" + name, receipts);
        }
    }

    String jdbcUrl() {
        return bed.jdbcUrl(database, Bed.PG_PORT);
    }

    String exchange() {
        return rabbit.exchange;
    }

    String queue() {
        return rabbit.queue;
    }

    String topic() {
        return kafka.topic;
    }

    /** What every relay of the trial runs with; scenarios override keys. */
    Map<String, String> relayConfig() {
        Map<String, String> config = new HashMap<>();
        config.put("database.url", jdbcUrl());
        config.put("broker.type", broker);
        if (broker.equals("rabbitmq")) {
            config.put("broker.rabbitmq.uri", bed.rabbitUri(Bed.RABBIT_PORT));
            config.put("broker.rabbitmq.exchange", rabbit.exchange);
            config.put("broker.rabbitmq.recovery.interval.ms", "1000");
        } else {
            config.put("broker.kafka.bootstrap.servers", bed.kafka().bootstrap());
            config.put("broker.kafka.topic", kafka.topic);
        }
        config.put("outbox.pollIntervalMs", "100");
        config.put("outbox.workers", "2");
        config.put("outbox.batchSize", "100");
        config.put("outbox.leaseMs", "10000");
        config.put("metrics.backlogSampleIntervalMs", "1000");
        config.put("shutdown.deadlineMs", "5000");
        config.put("startup.databaseWaitMs", "60000");
        return config;
    }

    RelayProcess startRelay(Map<String, String> overrides) throws Exception {
        Map<String, String> config = relayConfig();
        config.putAll(overrides);
        RelayProcess relay = RelayProcess.start(bed.jar, bed.workDir, name + "-relay-" + (++started), config);
        relays.add(relay);
        relay.awaitStarted(Duration.ofSeconds(60));
        return relay;
    }

    void produce(Producer.Workload workload) {
        producer = new Producer(jdbcUrl(), workload);
        producer.start();
    }

    Producer producer() {
        return producer;
    }

    void closeLater(AutoCloseable closeable) {
        closeables.add(closeable);
    }

    /** Marks the end of the fault: the drain time is measured from here. */
    void faultEnded() {
        faultEnd = System.nanoTime();
    }

    static Producer.Workload workload(double transactionsPerSecond, long seed) {
        return new Producer.Workload(32, 300, transactionsPerSecond, 0.1, 0.05, seed);
    }

    /** Waits until every event in the table was received, or {@code timeout}; answers whether it was. */
    boolean awaitDelivered(Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (receipts.containsAll(table().keySet())) {
                return true;
            }
            Thread.sleep(500);
        }
        failures.add("not every committed event arrived within " + timeout.toSeconds() + " s; still "
                + receipts.missing(table().keySet()) + " missing");
        return false;
    }

    Map<UUID, Verdict.Row> table() throws SQLException {
        Map<UUID, Verdict.Row> rows = new HashMap<>();
        try (Connection connection = DriverManager.getConnection(jdbcUrl());
             Statement statement = connection.createStatement();
             ResultSet result = statement.executeQuery("SELECT event_id, aggregate_id, seq FROM public.queuebox_outbox")) {
            while (result.next()) {
                rows.put(result.getObject(1, UUID.class), new Verdict.Row(result.getString(2), result.getLong(3)));
            }
        }
        return rows;
    }

    Set<UUID> eventIds(String where) throws SQLException {
        Set<UUID> ids = new HashSet<>();
        try (Connection connection = DriverManager.getConnection(jdbcUrl());
             Statement statement = connection.createStatement();
             ResultSet result = statement.executeQuery("SELECT event_id FROM public.queuebox_outbox WHERE " + where)) {
            while (result.next()) {
                ids.add(result.getObject(1, UUID.class));
            }
        }
        return ids;
    }

    /**
     * Pending rows the producer committed at least {@code age} ago. By the producer's clock, not {@code created_at}:
     * that is the writing transaction's start, and a transaction held open commits seconds later.
     */
    long countPendingCommittedFor(Duration age) throws SQLException {
        long before = System.nanoTime() - age.toNanos();
        Map<UUID, Long> committedAt = producer.committedAt();
        return eventIds("status = 'pending'").stream()
                .filter(id -> committedAt.getOrDefault(id, Long.MAX_VALUE) <= before).count();
    }

    /** The distinct lease tokens of the rows {@code where} selects, as a PostgreSQL array literal ({@code {}} if none). */
    String leaseTokens(String where) throws SQLException {
        return outboxValue("coalesce(array_agg(DISTINCT lease_token)::text, '{}')",
                "lease_token IS NOT NULL AND " + where, String.class);
    }

    long count(String where) throws SQLException {
        return outboxValue("count(*)", where, Long.class);
    }

    /** One value computed over the outbox rows {@code where} selects, on a connection of its own. */
    private <T> T outboxValue(String expression, String where, Class<T> type) throws SQLException {
        try (Connection connection = DriverManager.getConnection(jdbcUrl());
             Statement statement = connection.createStatement();
             ResultSet result = statement.executeQuery(
                     "SELECT " + expression + " FROM public.queuebox_outbox WHERE " + where)) {
            result.next();
            return result.getObject(1, type);
        }
    }

    /** Stops the producer, waits for the drain and judges. */
    Outcome finish(Duration drainTimeout) throws Exception {
        if (producer != null) {
            producer.stop();
        }
        if (faultEnd == Long.MAX_VALUE) {
            faultEnd = System.nanoTime();
        }
        awaitDelivered(drainTimeout);
        Thread.sleep(1000); // late copies (duplicates) still on their way
        Verdict verdict = Verdict.judge(name, table(), producer == null ? Map.of() : producer.committedAt(),
                producer == null ? java.util.Set.of() : producer.rolledBack(), receipts.snapshot(), faultEnd);
        if (producer != null) {
            notes.put("heldTransactions", producer.heldTransactions());
            notes.put("writesBehindHeld", producer.writesBehindHeld());
            notes.put("longestTransactionMs", producer.longestTransactionMillis());
            notes.put("producerFailedTransactions", producer.failedTransactions());
            notes.put("commitsInDoubt", producer.inDoubt().size());
        }
        return new Outcome(verdict, new TreeMap<>(notes), List.copyOf(failures));
    }

    @Override
    public void close() throws Exception {
        if (producer != null) {
            producer.stop();
        }
        for (RelayProcess relay : relays) {
            relay.close();
        }
        for (AutoCloseable closeable : closeables) {
            try {
                closeable.close();
            } catch (Exception ignored) {
                // best effort
            }
        }
        if (rabbit != null) {
            rabbit.close();
        }
        if (kafka != null) {
            kafka.close();
        }
        bed.dropDatabase(database);
    }

    /** A scenario's verdict, what it noted, and the scenario-specific checks that failed. */
    record Outcome(Verdict verdict, Map<String, Object> notes, List<String> failures) {
        boolean holds() {
            return verdict.holds() && failures.isEmpty();
        }
    }
}
