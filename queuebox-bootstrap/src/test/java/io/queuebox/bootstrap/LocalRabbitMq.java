package io.queuebox.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.ConnectionFactory;
import io.queuebox.testkit.services.TestServices;
import java.util.concurrent.TimeUnit;

/** The local RabbitMQ that outage tests stop and start with {@code rabbitmqctl} (TESTING.md). */
final class LocalRabbitMq {

    private LocalRabbitMq() {
    }

    static ConnectionFactory factory() throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(TestServices.rabbitMqUri());
        return factory;
    }

    /** Whether the tests' RabbitMQ is this machine's and {@code rabbitmqctl} can reach it. */
    static boolean canStop() {
        String uri = TestServices.rabbitMqUri();
        return (uri.contains("127.0.0.1") || uri.contains("localhost")) && commandWorks("rabbitmqctl", "-q", "status");
    }

    static boolean commandWorks(String... command) {
        try {
            return new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start().waitFor() == 0;
        } catch (Exception e) {
            return false;
        }
    }

    /** {@code rabbitmqctl -q <command>}, which must succeed within two minutes. */
    static void rabbitmqctl(String command) throws Exception {
        Process process = new ProcessBuilder("rabbitmqctl", "-q", command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        assertThat(process.waitFor(120, TimeUnit.SECONDS)).as("rabbitmqctl %s finished", command).isTrue();
        assertThat(process.exitValue()).as("rabbitmqctl %s", command).isZero();
    }
}
