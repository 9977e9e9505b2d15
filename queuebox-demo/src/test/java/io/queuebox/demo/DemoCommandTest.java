package io.queuebox.demo;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.bootstrap.cli.Cli;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The zero-install demo, run as a user runs it: embedded PostgreSQL, in-process Kafka, relay, consumer. */
class DemoCommandTest {

    private static final Pattern STATUS = Pattern.compile("written=(\\d+) delivered=(\\d+) backlog=(-?\\d+)");
    private static final Pattern REMOVED = Pattern.compile("demo data removed from (\\S+)");

    @Test
    void theDemoShowsEventsFlowingAndRemovesItsData() {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();

        int exit = Cli.execute(Map.of(), new PrintWriter(out, true), new PrintWriter(err, true),
                "demo", "--duration", "12", "--rate", "20");

        String output = out.toString();
        assertThat(exit).as(output + err).isZero();
        assertThat(output).contains("PostgreSQL (embedded, wal_level=logical)", "Kafka (in-process, KRaft)",
                "relay started");
        long delivered = 0;
        Matcher status = STATUS.matcher(output);
        while (status.find()) {
            delivered = Math.max(delivered, Long.parseLong(status.group(2)));
        }
        assertThat(delivered).as("events delivered to Kafka and consumed:%n%s", output).isPositive();
        Matcher removed = REMOVED.matcher(output);
        assertThat(removed.find()).isTrue();
        assertThat(Files.exists(Path.of(removed.group(1)))).as("the temporary directory is removed").isFalse();
    }
}
