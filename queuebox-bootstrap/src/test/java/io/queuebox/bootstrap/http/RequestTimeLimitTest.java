package io.queuebox.bootstrap.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The request time limit that frees a handler thread from a client that stalls its request. The JDK server reads
 * {@code sun.net.httpserver.maxReqTime} once per JVM, when its classes initialise, so each case runs in a JVM of
 * its own ({@link RequestTimeLimitProbe}) and reads what jdk.httpserver's ServerConfig took.
 */
class RequestTimeLimitTest {

    @Test
    void theEndpointsSetARequestTimeLimitWhenTheOperatorSetNone() throws Exception {
        List<String> out = probe(List.of());

        assertThat(out).contains("maxReqTime=" + HttpEndpoints.DEFAULT_MAX_REQUEST_SECONDS);
    }

    @Test
    void theOperatorsLimitWinsAndAStalledRequestLosesItsConnection() throws Exception {
        List<String> out = probe(List.of("-Dsun.net.httpserver.maxReqTime=1"), "stall");

        assertThat(out).contains("maxReqTime=1");
        String closed = out.stream().filter(line -> line.startsWith("closedAfterMs=")).findFirst().orElseThrow();
        assertThat(closed).isNotEqualTo("closedAfterMs=never");
        // 1 s limit, checked by the server's timer every second.
        assertThat(Long.parseLong(closed.substring("closedAfterMs=".length()))).isLessThan(5_000);
    }

    private static List<String> probe(List<String> properties, String... args) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
        command.add("--add-opens");
        command.add("jdk.httpserver/sun.net.httpserver=ALL-UNNAMED");
        command.addAll(properties);
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(RequestTimeLimitProbe.class.getName());
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("the probe ends").isTrue();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.exitValue()).as(output).isZero();
        return output.lines().toList();
    }
}
