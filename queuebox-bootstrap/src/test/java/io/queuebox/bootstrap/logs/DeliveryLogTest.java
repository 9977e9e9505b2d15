package io.queuebox.bootstrap.logs;

import static io.queuebox.testkit.fixtures.OutboxFixtures.aClaimedDeliveryOf;
import static io.queuebox.testkit.fixtures.OutboxFixtures.anEvent;
import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.queuebox.ports.Health;
import io.queuebox.ports.PublishOutcome;
import io.queuebox.testkit.MutableClock;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** The lines an operator reads, driven by the engine's events and the health polls on a clock the test moves. */
class DeliveryLogTest {

    private static final String CLAIM_SQL = "WITH RECURSIVE window_end AS MATERIALIZED (SELECT max(w.seq) AS seq FROM"
            + " \"public\".\"queuebox_outbox\" p) UPDATE \"public\".\"queuebox_outbox\" SET lease_token = :lease";

    private final MutableClock clock = MutableClock.create();
    private final AtomicReference<Health> broker = new AtomicReference<>(Health.up("connected"));
    private final DeliveryLog deliveryLog = new DeliveryLog(broker::get, clock);
    private final ListAppender<ILoggingEvent> log = new ListAppender<>();
    private Logger queuebox;
    private Level levelBefore;

    @BeforeEach
    void captureTheLog() {
        LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
        log.setContext(context);
        log.start();
        queuebox = context.getLogger("io.queuebox");
        levelBefore = queuebox.getLevel();
        queuebox.setLevel(Level.DEBUG);
        queuebox.addAppender(log);
    }

    @AfterEach
    void restoreTheLog() {
        queuebox.detachAppender(log);
        queuebox.setLevel(levelBefore);
    }

    @Test
    void aBrokerOutageIsOneDownLineASummaryPerWindowAndOneRecoveredLineFollowedByTheRest() {
        broker.set(Health.down("connection lost, recovering automatically"));
        for (int second = 0; second < 40; second++) {
            deliveryLog.onPublished(outcomes(70, id -> PublishOutcome.notAttempted(id,
                    "not attempted: RabbitMQ unavailable: AlreadyClosedException: connection is already closed")), Duration.ZERO);
            deliveryLog.brokerHealth(broker.get());
            deliveryLog.tick();
            clock.advance(Duration.ofSeconds(1));
        }
        broker.set(Health.up("connected to localhost/127.0.0.1:5672"));
        deliveryLog.onPublished(outcomes(3, PublishOutcome::acked), Duration.ZERO);
        clock.advance(Duration.ofSeconds(2));
        deliveryLog.brokerHealth(broker.get());
        deliveryLog.tick();

        assertThat(operatorLines()).containsExactly(
                "WARN broker down: connection lost, recovering automatically",
                "WARN 2,170 publishes failed in the last 30 s: 2,170 not attempted (RabbitMQ unavailable:"
                        + " AlreadyClosedException: connection is already closed)",
                "INFO broker recovered after 40 s",
                "WARN 630 publishes failed in the last 12 s: 630 not attempted (RabbitMQ unavailable:"
                        + " AlreadyClosedException: connection is already closed)");
    }

    @Test
    void aDatabaseRestartIsOneDownLineOneRecoveredLineAndTheClaimsCountWithoutSqlOrStackTrace() {
        SQLException terminated = new SQLException("FATAL: terminating connection due to administrator command", "57P01");
        SQLException refused = new SQLException("Connection to 127.0.0.1:5432 refused.", "08001");
        deliveryLog.onError("claim", jdbi(terminated));
        for (int i = 0; i < 20; i++) {
            clock.advance(Duration.ofMillis(100));
            deliveryLog.onError(i % 2 == 0 ? "claim" : "markSent", jdbi(refused));
            deliveryLog.databaseHealth(Health.down("no connection: 08001 Connection to 127.0.0.1:5432 refused."));
            deliveryLog.tick();
        }
        clock.advance(Duration.ofMillis(500));
        deliveryLog.onClaimed(0, Duration.ZERO);
        clock.advance(Duration.ofSeconds(2));
        deliveryLog.databaseHealth(Health.up("connection valid"));

        assertThat(operatorLines()).containsExactly(
                "WARN database down: 57P01 terminating connection due to administrator command",
                "INFO database recovered after 2.5 s",
                "WARN 11 claims failed in the last 4.5 s: 57P01 terminating connection due to administrator command",
                "WARN 10 delivery steps failed in the last 4.3 s: 10 markSent (08001 Connection to 127.0.0.1:5432 refused.)");
        assertThat(log.list).filteredOn(e -> e.getLevel() == Level.DEBUG && e.getThrowableProxy() != null)
                .as("the stack traces, at DEBUG").hasSize(21);
    }

    @Test
    void aFloodOfNacksWithTheBrokerUpIsToldAtOnceThenOncePerWindow() {
        for (int second = 0; second < 65; second++) {
            deliveryLog.onPublished(outcomes(10, id -> PublishOutcome.retriable(id, "nacked by RabbitMQ")), Duration.ZERO);
            deliveryLog.tick();
            clock.advance(Duration.ofSeconds(1));
        }
        deliveryLog.flush();

        assertThat(operatorLines()).containsExactly(
                "WARN 10 publishes failed: 10 retriable (nacked by RabbitMQ)",
                "WARN 300 publishes failed in the last 30 s: 300 retriable (nacked by RabbitMQ)",
                "WARN 300 publishes failed in the last 30 s: 300 retriable (nacked by RabbitMQ)",
                "WARN 40 publishes failed in the last 5 s: 40 retriable (nacked by RabbitMQ)");
    }

    @Test
    void parkingsAreLoggedOneByOneUpToTenPerWindowThenCounted() {
        for (int i = 0; i < 250; i++) {
            deliveryLog.onParked(aClaimedDeliveryOf(anEvent()), "permanent failure: unroutable: returned by RabbitMQ"
                    + " (312 NO_ROUTE)");
        }
        clock.advance(Duration.ofSeconds(30));
        deliveryLog.tick();

        List<String> lines = operatorLines();
        assertThat(lines).hasSize(11);
        assertThat(lines.subList(0, 10)).allMatch(line -> line.matches("WARN event \\S+ of \\S+ parked after 1 attempt\\(s\\):"
                + " permanent failure: unroutable: returned by RabbitMQ \\(312 NO_ROUTE\\)"));
        assertThat(lines.get(10)).isEqualTo("WARN 240 more events parked in the last 30 s (the first 10 are logged above);"
                + " list them with 'queuebox outbox parked'");
    }

    @Test
    void anErrorThatEndsAThreadsCycleIsAnErrorWithItsStackTraceOncePerWindow() {
        for (int i = 0; i < 5; i++) {
            deliveryLog.onError("worker", new NoClassDefFoundError("com/example/Missing"));
            clock.advance(Duration.ofSeconds(1));
        }
        clock.advance(Duration.ofSeconds(30));
        deliveryLog.tick();

        assertThat(operatorLines()).containsExactly(
                "ERROR delivery step 'worker' failed unexpectedly, the engine carries on: NoClassDefFoundError:"
                        + " com/example/Missing",
                "ERROR 4 more unexpected failures of delivery threads in the last 35 s");
        assertThat(log.list.get(log.list.size() - 2).getThrowableProxy()).isNotNull();
    }

    // ---------------------------------------------------------------- helpers

    private List<String> operatorLines() {
        List<String> lines = new ArrayList<>();
        for (ILoggingEvent event : log.list) {
            if (event.getLevel().isGreaterOrEqual(Level.INFO)) {
                assertThat(event.getFormattedMessage()).hasSizeLessThanOrEqualTo(400).doesNotContain("SELECT", "UPDATE");
                if (event.getLevel() != Level.ERROR) {
                    assertThat(event.getThrowableProxy()).as(event.getFormattedMessage()).isNull();
                }
                lines.add(event.getLevel() + " " + event.getFormattedMessage());
            }
        }
        return lines;
    }

    private static List<PublishOutcome> outcomes(int count, Function<UUID, PublishOutcome> outcome) {
        List<PublishOutcome> outcomes = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            outcomes.add(outcome.apply(UUID.randomUUID()));
        }
        return outcomes;
    }

    /** As Jdbi wraps the driver's exception: the statement appended to the message. */
    private static RuntimeException jdbi(SQLException driver) {
        return new RuntimeException(driver + " [statement:\"" + CLAIM_SQL + "\", arguments:{}]", driver);
    }
}
