package io.queuebox.bootstrap.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

class LoggingTest {

    private final PrintStream originalErr = System.err;
    private final ByteArrayOutputStream captured = new ByteArrayOutputStream();

    private String logOneLine(String format) {
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        Logging.configure(format, "INFO");
        LoggerFactory.getLogger("io.queuebox.test").info("relay started on port {}", 8080);
        LoggerFactory.getLogger("io.queuebox.test").debug("not at INFO");
        return captured.toString(StandardCharsets.UTF_8);
    }

    @AfterEach
    void restore() {
        System.setErr(originalErr);
        Logging.configure("text", "INFO");
    }

    @Test
    void jsonFormatWritesOneJsonObjectPerLine() throws Exception {
        String output = logOneLine("json");

        assertThat(output.lines()).hasSize(1);
        JsonNode line = new ObjectMapper().readTree(output.lines().findFirst().orElseThrow());
        assertThat(line.path("level").asText()).isEqualTo("INFO");
        assertThat(line.path("loggerName").asText()).isEqualTo("io.queuebox.test");
        assertThat(line.path("formattedMessage").asText()).isEqualTo("relay started on port 8080");
    }

    @Test
    void anOperatorsLogbackFileIsLeftInCharge() throws Exception {
        ch.qos.logback.classic.LoggerContext context = (ch.qos.logback.classic.LoggerContext) LoggerFactory.getILoggerFactory();
        context.reset();
        ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> operators =
                new ch.qos.logback.core.read.ListAppender<>();
        operators.setName("operators");
        operators.setContext(context);
        operators.start();
        context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME).addAppender(operators);
        context.getLogger("io.queuebox").setLevel(ch.qos.logback.classic.Level.DEBUG);

        Logging.configure("json", "WARN", "/etc/queuebox/logback.xml");
        LoggerFactory.getLogger("io.queuebox.test").debug("kept at the operator's level");

        assertThat(context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME).getAppender("operators")).isSameAs(operators);
        assertThat(context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME).getAppender("console")).isNull();
        assertThat(operators.list).extracting(ch.qos.logback.classic.spi.ILoggingEvent::getFormattedMessage)
                .contains("kept at the operator's level");
    }

    @Test
    void textFormatWritesAHumanLine() {
        String output = logOneLine("text");

        assertThat(output.lines()).singleElement().satisfies(line ->
                assertThat(line).contains(" INFO  [").contains("io.queuebox.test - relay started on port 8080"));
    }
}
