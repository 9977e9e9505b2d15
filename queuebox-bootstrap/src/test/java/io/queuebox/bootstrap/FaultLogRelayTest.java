package io.queuebox.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.zaxxer.hikari.HikariDataSource;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.bootstrap.internal.Logging;
import io.queuebox.embed.internal.Migrations;
import io.queuebox.embed.internal.Pools;
import io.queuebox.bootstrap.internal.Relay;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.postgres.PostgresOutbox;
import io.queuebox.postgres.PostgresOutboxSettings;
import io.queuebox.testkit.services.TestServices;
import java.nio.charset.StandardCharsets;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.LoggerFactory;

/**
 * What an operator reads while the relay's dependencies fail, on the real PostgreSQL and RabbitMQ, with the
 * relay's own logging set-up: one line when a dependency goes down, one when it is back (with how long), a
 * count of the failures in between, no SQL, no stack trace, nothing longer than a line.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class FaultLogRelayTest {

    private static final int LONGEST_LINE = 400;
    // Long enough for the relay to notice, short enough for a quick build; docs/operations.md shows a 30 s one.
    private static final Duration BROKER_OUTAGE = Duration.ofSeconds(8);
    private static final Pattern SUMMARY_COUNT = Pattern.compile("\\d[\\d,]* ");

    private TestDatabase database;
    private ListAppender<ILoggingEvent> log;

    @BeforeEach
    void database() {
        database = TestDatabase.create("faultlog");
        Logging.configure("text", "INFO");
        log = new ListAppender<>();
    }

    /** From the relay's start on: what the test's own set-up (the migration) logs is not the relay's. */
    private void captureTheLog() {
        LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
        log.setContext(context);
        log.start();
        context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME).addAppender(log);
    }

    @AfterEach
    void restoreTheLog() {
        Logger root = ((LoggerContext) LoggerFactory.getILoggerFactory()).getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        root.detachAppender(log);
        Logging.configure("text", "INFO");
        database.close();
    }

    @Test
    void aBrokerOutageReadsAsOneDownLineOneRecoveredLineAndACountOfWhatWasHeldUp() throws Exception {
        assumeTrue(LocalRabbitMq.canStop(), "needs the local RabbitMQ and rabbitmqctl to stop and start it");
        String exchange = "qb_faultlog_" + UUID.randomUUID().toString().substring(0, 8);
        // Only durable exchanges and queues survive stop_app.
        declareDurable(exchange);
        QueueBoxConfig config = QueueBoxConfig.of(configFor(exchange));
        migrate(config);
        captureTheLog();
        AtomicBoolean writing = new AtomicBoolean(true);
        AtomicInteger written = new AtomicInteger();
        Thread writer = new Thread(() -> writeUntilStopped("order", written, writing), "faultlog-writer");
        try (Relay relay = Relay.start(config)) {
            writer.start();
            await().atMost(Duration.ofSeconds(20)).until(() -> sent() >= 20);
            LocalRabbitMq.rabbitmqctl("stop_app");
            try {
                Thread.sleep(BROKER_OUTAGE.toMillis());
            } finally {
                LocalRabbitMq.rabbitmqctl("start_app");
                LocalRabbitMq.rabbitmqctl("await_startup");
            }
            writing.set(false);
            writer.join(10_000);
            await().atMost(Duration.ofSeconds(30)).until(() -> sent() == written.get());
            await().atMost(Duration.ofSeconds(10)).until(() -> lines("broker recovered").size() == 1);
        } finally {
            writing.set(false);
            deleteExchangeAndQueue(exchange);
        }
        print("broker outage");
        assertThat(lines("broker down")).as("down lines").hasSize(1);
        assertThat(lines("broker recovered after")).as("recovered lines").hasSize(1);
        assertThat(lines("publishes failed")).as("publish failure summaries").isNotEmpty()
                .anySatisfy(line -> assertThat(line).containsPattern(SUMMARY_COUNT + "not attempted"));
        assertReadable();
    }

    @Test
    void aDatabaseRestartReadsAsOneDownLineOneRecoveredLineAndAShortCauseWithoutSql() throws Exception {
        assumeTrue(canRestartPostgres(), "needs the local PostgreSQL cluster and pg_ctlcluster to restart it");
        String exchange = "qb_faultlog_" + UUID.randomUUID().toString().substring(0, 8);
        declareDurable(exchange);
        QueueBoxConfig config = QueueBoxConfig.of(configFor(exchange));
        migrate(config);
        captureTheLog();
        try (Relay relay = Relay.start(config)) {
            writeEvents("order", 10, 20);
            await().atMost(Duration.ofSeconds(20)).until(() -> sent() >= 10);
            restartPostgres();
            await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() -> {
                writeEvents("order", 1, 20);
                return true;
            });
            await().atMost(Duration.ofSeconds(30)).ignoreExceptions()
                    .until(() -> database.count("public.queuebox_outbox", "status <> 'sent'") == 0);
            await().atMost(Duration.ofSeconds(15)).until(() -> lines("database recovered").size() == 1);
        } finally {
            deleteExchangeAndQueue(exchange);
        }
        print("database restart");
        assertThat(lines("database down")).as("down lines").hasSize(1);
        assertThat(lines("database recovered after")).as("recovered lines").hasSize(1);
        assertThat(lines("failed")).as("failure lines")
                .anySatisfy(line -> assertThat(line).containsPattern("^" + SUMMARY_COUNT + "claims? failed"))
                .noneSatisfy(line -> assertThat(line).containsIgnoringCase("select "))
                .noneSatisfy(line -> assertThat(line).containsIgnoringCase("update "));
        assertReadable();
    }

    @Test
    void aFloodOfNacksAndReturnsIsCountedAndItsParkingsAreCappedPerWindow() throws Exception {
        String exchange = "qb_flood_" + UUID.randomUUID().toString().substring(0, 8);
        declareFloodExchange(exchange);
        Map<String, String> values = configFor(exchange);
        values.put("outbox.retry.initialMs", "100");
        values.put("outbox.retry.maxMs", "200");
        QueueBoxConfig config = QueueBoxConfig.of(values);
        migrate(config);
        captureTheLog();
        try (Relay relay = Relay.start(config)) {
            writeEvents("lost", 200, 200);  // no queue bound: returned, parked at once
            writeEvents("nack", 200, 200);  // a full queue that rejects: nacked, retried, parked after 20 attempts
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> database.count("public.queuebox_outbox", "status = 'parked'") == 400);
            Thread.sleep(2_000);
        } finally {
            deleteExchangeAndQueue(exchange);
        }
        print("nack and return flood");
        assertThat(lines(" parked after ")).as("parkings logged one by one").hasSizeLessThanOrEqualTo(10);
        assertThat(lines("more events parked")).as("the parkings beyond the first ten, counted")
                .anySatisfy(line -> assertThat(line).containsPattern(SUMMARY_COUNT + "more events parked"));
        assertThat(lines("publishes failed")).as("publish failure summaries")
                .anySatisfy(line -> assertThat(line).containsPattern(SUMMARY_COUNT + "permanent"))
                .anySatisfy(line -> assertThat(line).containsPattern(SUMMARY_COUNT + "retriable"));
        assertReadable();
    }

    // ---------------------------------------------------------------- the log

    private List<String> lines(String containing) {
        return events().stream().map(ILoggingEvent::getFormattedMessage).filter(m -> m.contains(containing)).toList();
    }

    private List<ILoggingEvent> events() {
        synchronized (log) {
            return new ArrayList<>(log.list);
        }
    }

    /** Every line an operator sees at INFO or above: short, without a stack trace, without a secret. */
    private void assertReadable() {
        for (ILoggingEvent event : events()) {
            if (!event.getLevel().isGreaterOrEqual(Level.INFO)) {
                continue;
            }
            String line = event.getLoggerName() + ": " + event.getFormattedMessage();
            assertThat(event.getFormattedMessage()).as(line).hasSizeLessThanOrEqualTo(LONGEST_LINE).doesNotContain("\n");
            assertThat(event.getThrowableProxy()).as("a stack trace at %s: %s", event.getLevel(), line).isNull();
            assertThat(line).doesNotContain("guest:guest");
        }
    }

    private void print(String what) {
        System.out.println("---- what the relay logged at INFO and above: " + what);
        for (ILoggingEvent event : events()) {
            if (event.getLevel().isGreaterOrEqual(Level.INFO)) {
                System.out.println(event.getLevel() + " " + event.getLoggerName() + " - " + event.getFormattedMessage()
                        + (event.getThrowableProxy() == null ? "" : " [+ stack trace " + event.getThrowableProxy().getClassName() + "]"));
            }
        }
    }

    // ---------------------------------------------------------------- the database

    private Map<String, String> configFor(String exchange) {
        Map<String, String> values = new HashMap<>();
        values.put("database.url", database.url());
        values.put("broker.type", "rabbitmq");
        values.put("broker.rabbitmq.uri", TestServices.rabbitMqUri());
        values.put("broker.rabbitmq.exchange", exchange);
        values.put("outbox.pollIntervalMs", "50");
        values.put("http.port", "0");
        values.put("http.host", "127.0.0.1");
        values.put("shutdown.deadlineMs", "5000");
        return values;
    }

    private static void migrate(QueueBoxConfig config) {
        try (HikariDataSource pool = Pools.operator(config)) {
            Migrations.migrate(pool, config);
        }
    }

    private long sent() throws Exception {
        return database.count("public.queuebox_outbox", "status = 'sent'");
    }

    /** {@code count} events spread over {@code aggregates} aggregates of the type, in one transaction. */
    private void writeEvents(String aggregateType, int count, int aggregates) throws Exception {
        List<OutboxEvent> events = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            events.add(new OutboxEvent(UUID.randomUUID(), aggregateType, aggregateType + "-" + (i % aggregates),
                    "Happened", null, ("{\"n\":" + i + "}").getBytes(StandardCharsets.UTF_8), null, Map.of()));
        }
        try (java.sql.Connection connection = DriverManager.getConnection(database.url())) {
            connection.setAutoCommit(false);
            PostgresOutbox.jdbcWriter(PostgresOutboxSettings.defaults()).enqueueAll(connection, events);
            connection.commit();
        }
    }

    private void writeUntilStopped(String aggregateType, AtomicInteger written, AtomicBoolean writing) {
        try {
            while (writing.get()) {
                writeEvents(aggregateType, 1, 20);
                written.incrementAndGet();
                Thread.sleep(20);
            }
        } catch (Exception e) {
            throw new IllegalStateException("the test's writer failed", e);
        }
    }

    private static boolean canRestartPostgres() {
        return TestServices.postgresUrl().contains("127.0.0.1") && LocalRabbitMq.commandWorks("pg_lsclusters");
    }

    private static void restartPostgres() throws Exception {
        Process process = new ProcessBuilder("pg_ctlcluster", "--skip-systemctl-redirect", "15", "main", "restart")
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("pg_ctlcluster restart finished").isTrue();
        assertThat(process.exitValue()).as("pg_ctlcluster restart").isZero();
    }

    // ---------------------------------------------------------------- the broker

    private static void declareFloodExchange(String name) throws Exception {
        try (Connection connection = LocalRabbitMq.factory().newConnection("queuebox-faultlog-test-setup")) {
            Channel channel = connection.createChannel();
            channel.exchangeDeclare(name, "topic", false, false, null);
            // A queue that can hold nothing and rejects what it cannot hold: RabbitMQ nacks the publish.
            channel.queueDeclare(name + "_q", false, false, false,
                    Map.of("x-max-length", 0, "x-overflow", "reject-publish"));
            channel.queueBind(name + "_q", name, "nack.#");
        }
    }

    private static void declareDurable(String name) throws Exception {
        try (Connection connection = LocalRabbitMq.factory().newConnection("queuebox-faultlog-test-setup")) {
            Channel channel = connection.createChannel();
            channel.exchangeDeclare(name, "topic", true);
            channel.queueDeclare(name + "_q", true, false, false, null);
            channel.queueBind(name + "_q", name, "#");
        }
    }

    private static void deleteExchangeAndQueue(String name) {
        try (Connection connection = LocalRabbitMq.factory().newConnection("queuebox-faultlog-test-cleanup")) {
            Channel channel = connection.createChannel();
            channel.queueDelete(name + "_q");
            channel.exchangeDelete(name);
        } catch (Exception e) {
            System.err.println("could not delete the test's exchange " + name + ": " + e);
        }
    }
}
