package io.queuebox.bootstrap.console;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class ConsoleHostsTest {

    private final ConsoleHosts loopback = ConsoleHosts.of(false, List.of());

    @Test
    void withoutAllowRemoteTheLoopbackNamesAreServedOnAnyPort() {
        assertThat(List.of("localhost", "localhost:8080", "LOCALHOST:1", "127.0.0.1", "127.0.0.1:8080", "127.1.2.3:9",
                "[::1]", "[::1]:8080")).allMatch(loopback::allowsHost);
    }

    @Test
    void aForeignNameOrAnythingThatMerelyStartsLikeALoopbackNameIsNot() {
        assertThat(List.of("rebind.attacker.example", "rebind.attacker.example:8080", "127.0.0.1.attacker.example",
                "localhost.attacker.example", "127.0.0.256", "10.0.0.1", "[::2]", "", "localhost:80/x",
                "user@localhost")).noneMatch(loopback::allowsHost);
        assertThat(loopback.allowsHost(null)).isFalse();
    }

    @Test
    void anAllowedHostWithoutAPortAllowsAnyPortOneWithAPortThatPortOnly() {
        ConsoleHosts hosts = ConsoleHosts.of(false, List.of("relay.internal", "tunnel.example:9000"));

        assertThat(hosts.allowsHost("relay.internal:8080")).isTrue();
        assertThat(hosts.allowsHost("Relay.Internal")).isTrue();
        assertThat(hosts.allowsHost("tunnel.example:9000")).isTrue();
        assertThat(hosts.allowsHost("tunnel.example:9001")).isFalse();
        assertThat(hosts.allowsHost("tunnel.example")).isFalse();
        assertThat(hosts.allowsHost("localhost:8080")).as("loopback still, without allowRemote").isTrue();
    }

    @Test
    void withAllowRemoteOnlyTheAllowedHostsAreServed() {
        ConsoleHosts hosts = ConsoleHosts.of(true, List.of("console.example.com"));

        assertThat(hosts.allowsHost("console.example.com")).isTrue();
        assertThat(hosts.allowsHost("localhost:8080")).isFalse();
        assertThat(hosts.allowsHost("rebind.attacker.example")).isFalse();
    }

    @Test
    void anOriginIsCheckedAgainstTheServedNamesWithTheSchemesDefaultPort() {
        ConsoleHosts hosts = ConsoleHosts.of(true, List.of("console.example.com:443", "plain.example.com"));

        assertThat(hosts.allowsOrigin("https://console.example.com")).isTrue();
        assertThat(hosts.allowsOrigin("http://console.example.com")).as("port 80, not 443").isFalse();
        assertThat(hosts.allowsOrigin("http://plain.example.com:8080")).isTrue();
        assertThat(loopback.allowsOrigin("http://127.0.0.1:8080")).isTrue();
        assertThat(List.of("http://rebind.attacker.example:8080", "null", "file://", "ftp://localhost",
                "http://localhost:8080/path", "http://localhost.attacker.example")).noneMatch(loopback::allowsOrigin);
        assertThat(loopback.allowsOrigin(null)).isFalse();
    }
}
