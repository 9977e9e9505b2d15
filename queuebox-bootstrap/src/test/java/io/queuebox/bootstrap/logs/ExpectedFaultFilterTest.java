package io.queuebox.bootstrap.logs;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.sql.SQLException;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class ExpectedFaultFilterTest {

    private final LoggerContext context = new LoggerContext();
    private final ListAppender<ILoggingEvent> log = new ListAppender<>();

    @BeforeEach
    void logback() {
        ExpectedFaultFilter filter = new ExpectedFaultFilter();
        filter.setContext(context);
        filter.start();
        context.addTurboFilter(filter);
        log.setContext(context);
        log.start();
        Logger root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        root.addAppender(log);
        root.setLevel(Level.DEBUG);
    }

    @Test
    void thePoolsWarningAboutABrokenConnectionWithItsStackTraceGoesToDebug() {
        SQLException terminated = new SQLException("FATAL: terminating connection due to administrator command", "57P01");

        context.getLogger("com.zaxxer.hikari.pool.ProxyConnection").warn(
                "{} - Connection {} marked as broken because of SQLSTATE({}), ErrorCode({})",
                "queuebox-delivery", "PgConnection@1", "57P01", 0, terminated);

        assertThat(log.list).singleElement().satisfies(event -> {
            assertThat(event.getLevel()).isEqualTo(Level.DEBUG);
            assertThat(event.getThrowableProxy().getMessage()).contains("administrator command");
        });
    }

    @Test
    void theAmqpClientsWarningAboutALostSocketGoesToDebug() {
        context.getLogger("com.rabbitmq.client.impl.ForgivingExceptionHandler")
                .warn("An unexpected connection driver error occurred (Exception message: Connection reset by peer)");

        assertThat(log.list).singleElement().extracting(ILoggingEvent::getLevel).isEqualTo(Level.DEBUG);
    }

    @Test
    void otherWarningsOfTheLibrariesAndEveryWarningOfQueueBoxStay() {
        context.getLogger("com.zaxxer.hikari.pool.ProxyLeakTask").warn("Connection leak detection triggered for {}", "x",
                new Exception("leak"));
        context.getLogger("io.queuebox.health").warn("database down: 57P01 terminating connection");

        assertThat(log.list).extracting(ILoggingEvent::getLevel).containsExactly(Level.WARN, Level.WARN);
    }

    @Test
    void nothingIsLoggedAgainWhenDebugIsOff() {
        context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME).setLevel(Level.INFO);

        context.getLogger("com.rabbitmq.client.impl.ForgivingExceptionHandler")
                .warn("An unexpected connection driver error occurred (Exception message: Socket closed)");

        assertThat(log.list).isEmpty();
    }
}
