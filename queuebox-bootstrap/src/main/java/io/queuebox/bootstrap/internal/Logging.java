package io.queuebox.bootstrap.internal;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.JsonEncoder;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.encoder.Encoder;
import io.queuebox.embed.config.Keys;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.bootstrap.logs.ExpectedFaultFilter;
import org.slf4j.ILoggerFactory;
import org.slf4j.LoggerFactory;

/**
 * Sets up logback from {@code log.format} and {@code log.level}: a human line format, or one JSON object per
 * line (logback's {@link JsonEncoder}). Does nothing when slf4j is bound to something else (embedding), and
 * nothing when the operator gave logback a file of their own with {@code -Dlogback.configurationFile}: logback
 * has loaded it already, and it wins over both keys.
 */
public final class Logging {

    /** Logback's own system property for a configuration file (ClassicConstants.CONFIG_FILE_PROPERTY). */
    static final String OPERATOR_FILE_PROPERTY = ch.qos.logback.classic.ClassicConstants.CONFIG_FILE_PROPERTY;

    static final String TEXT_PATTERN = "%d{yyyy-MM-dd'T'HH:mm:ss.SSSXXX} %-5level [%thread] %logger{36} - %msg%n";

    private Logging() {
    }

    public static void configure(QueueBoxConfig config) {
        configure(config.string(Keys.LOG_FORMAT), config.string(Keys.LOG_LEVEL));
    }

    public static void configure(String format, String level) {
        configure(format, level, System.getProperty(OPERATOR_FILE_PROPERTY));
    }

    /** @param operatorFile the value of {@value #OPERATOR_FILE_PROPERTY}, or {@code null} when not set */
    static void configure(String format, String level, String operatorFile) {
        ILoggerFactory factory = LoggerFactory.getILoggerFactory();
        if (!(factory instanceof LoggerContext context)) {
            return;
        }
        if (operatorFile != null && !operatorFile.isBlank()) {
            LoggerFactory.getLogger(Logging.class).debug("logging as {} configures it; log.format and log.level unused",
                    operatorFile);
            return;
        }
        context.reset();
        ExpectedFaultFilter expectedFaults = new ExpectedFaultFilter();
        expectedFaults.setContext(context);
        expectedFaults.start();
        context.addTurboFilter(expectedFaults);
        Encoder<ILoggingEvent> encoder;
        if ("json".equals(format)) {
            JsonEncoder json = new JsonEncoder();
            json.setWithSequenceNumber(false);
            json.setWithContext(false);
            // A log pipeline wants the final text, not the template and its arguments.
            json.setWithFormattedMessage(true);
            json.setWithMessage(false);
            json.setWithArguments(false);
            encoder = json;
        } else {
            PatternLayoutEncoder text = new PatternLayoutEncoder();
            text.setPattern(TEXT_PATTERN);
            encoder = text;
        }
        encoder.setContext(context);
        encoder.start();
        ConsoleAppender<ILoggingEvent> console = new ConsoleAppender<>();
        console.setName("console");
        console.setContext(context);
        // Logs go to stderr so that stdout stays for command output (config check, outbox stats).
        console.setTarget("System.err");
        console.setEncoder(encoder);
        console.start();
        Logger root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        root.setLevel(Level.INFO);
        root.addAppender(console);
        context.getLogger("io.queuebox").setLevel(Level.toLevel(level, Level.INFO));
        // Client libraries log every connection and configuration at INFO; their warnings are what matters.
        context.getLogger("org.apache.kafka").setLevel(Level.WARN);
        context.getLogger("com.rabbitmq").setLevel(Level.WARN);
        context.getLogger("io.debezium").setLevel(Level.WARN);
    }
}
