package io.queuebox.testkit.services;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.Arrays;
import java.util.Locale;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;

/**
 * Finds the real services that integration tests talk to, in this order: an explicit setting
 * ({@code QUEUEBOX_TEST_POSTGRES_URL}, {@code QUEUEBOX_TEST_RABBITMQ_URI}, {@code QUEUEBOX_TEST_KAFKA_BOOTSTRAP},
 * {@code QUEUEBOX_TEST_SQLSERVER_URL}, as environment variable or system property); then the service on
 * its default local port. A service that cannot be found skips the test with a message that says how to
 * provide it, unless {@code QUEUEBOX_TEST_REQUIRE} names it (CI sets {@code postgres,rabbitmq,kafka}):
 * then the test fails, so a missing service can never pass as a skipped suite.
 *
 * <p>Kafka has no default local server; its adapter's tests start one in-process when no explicit
 * bootstrap address is given.
 */
public final class TestServices {

    public static final String POSTGRES = "postgres";
    public static final String RABBITMQ = "rabbitmq";
    public static final String KAFKA = "kafka";
    public static final String SQLSERVER = "sqlserver";

    private static final String DEFAULT_POSTGRES_URL = "jdbc:postgresql://127.0.0.1:5432/test?user=postgres";
    private static final String DEFAULT_RABBITMQ_URI = "amqp://guest:guest@127.0.0.1:5672/%2F";

    private TestServices() {
    }

    /** A JDBC URL of a PostgreSQL server whose user may create databases and schemas. */
    public static String postgresUrl() {
        return explicit("QUEUEBOX_TEST_POSTGRES_URL")
                .or(() -> reachable("127.0.0.1", 5432) ? Optional.of(DEFAULT_POSTGRES_URL) : Optional.empty())
                .orElseGet(() -> missing(POSTGRES,
                        "start PostgreSQL on 127.0.0.1:5432 or set QUEUEBOX_TEST_POSTGRES_URL to a JDBC URL"));
    }

    /** An AMQP URI of a RabbitMQ broker. */
    public static String rabbitMqUri() {
        return explicit("QUEUEBOX_TEST_RABBITMQ_URI")
                .or(() -> reachable("127.0.0.1", 5672) ? Optional.of(DEFAULT_RABBITMQ_URI) : Optional.empty())
                .orElseGet(() -> missing(RABBITMQ,
                        "start RabbitMQ on 127.0.0.1:5672 (rabbitmq-server -detached) or set QUEUEBOX_TEST_RABBITMQ_URI"));
    }

    /** An explicitly given Kafka bootstrap address; empty means the caller starts a broker in-process. */
    public static Optional<String> explicitKafkaBootstrap() {
        return explicit("QUEUEBOX_TEST_KAFKA_BOOTSTRAP");
    }

    /** An explicit setting from the environment or a system property of the same name. */
    public static Optional<String> explicit(String name) {
        String value = System.getProperty(name);
        if (value == null || value.isBlank()) {
            value = System.getenv(name);
        }
        return value == null || value.isBlank() ? Optional.empty() : Optional.of(value.trim());
    }

    /** Whether {@code QUEUEBOX_TEST_REQUIRE} names the service, so that its absence fails instead of skipping. */
    public static boolean required(String service) {
        return explicit("QUEUEBOX_TEST_REQUIRE")
                .map(list -> Arrays.stream(list.split(","))
                        .map(s -> s.trim().toLowerCase(Locale.ROOT))
                        .anyMatch(service::equals))
                .orElse(false);
    }

    /**
     * Reports a missing service: fails when it is required, otherwise aborts the test (JUnit reports it as
     * skipped, with the message).
     */
    public static <T> T missing(String service, String howToProvide) {
        String message = service + " is not available: " + howToProvide;
        if (required(service)) {
            throw new IllegalStateException(message + " (QUEUEBOX_TEST_REQUIRE names " + service + ")");
        }
        Assumptions.abort(message);
        throw new AssertionError("unreachable");
    }

    /** Whether a TCP connection to the address succeeds within a second. */
    public static boolean reachable(String host, int port) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(host, port), 1000);
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
