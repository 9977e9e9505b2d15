package io.queuebox.kafka.testing;

import io.queuebox.testkit.services.TestServices;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.apache.kafka.common.test.KafkaClusterTestKit;
import org.apache.kafka.common.test.TestKitNodes;

/**
 * A real Kafka broker (KRaft, one combined broker and controller) in the test JVM. {@link #bootstrapServers()}
 * starts one shared broker per JVM on first use, unless {@code QUEUEBOX_TEST_KAFKA_BOOTSTRAP} names an
 * external one. {@link #startDedicated()} starts a throw-away broker that a test may stop.
 *
 * <p>Shipped in adapter-kafka's test-jar so that other modules' tests start the broker the same way.
 */
public final class InProcessKafka implements AutoCloseable {

    private static volatile String shared;

    private final KafkaClusterTestKit cluster;

    private InProcessKafka(KafkaClusterTestKit cluster) {
        this.cluster = cluster;
    }

    /** The bootstrap address of the explicit broker, or of the JVM's shared in-process broker. */
    public static String bootstrapServers() {
        String explicit = TestServices.explicitKafkaBootstrap().orElse(null);
        if (explicit != null) {
            return explicit;
        }
        if (shared == null) {
            synchronized (InProcessKafka.class) {
                if (shared == null) {
                    InProcessKafka kafka = startDedicated();
                    Runtime.getRuntime().addShutdownHook(new Thread(kafka::close, "in-process-kafka-stop"));
                    shared = kafka.bootstrap();
                }
            }
        }
        return shared;
    }

    /** A new broker of its own; the caller closes it. */
    public static InProcessKafka startDedicated() {
        return startDedicated(Map.of());
    }

    /** A new broker of its own with these broker settings on top of the shared one's; the caller closes it. */
    public static InProcessKafka startDedicated(Map<String, String> brokerSettings) {
        try {
            // Our own directory: Kafka's default temp directory is deleted by a JVM shutdown hook of its own,
            // which can race the broker's shutdown and make it halt the JVM on a failed log directory.
            Path directory = Files.createTempDirectory("queuebox-kafka-");
            KafkaClusterTestKit.Builder builder = new KafkaClusterTestKit.Builder(new TestKitNodes.Builder()
                    .setBaseDirectory(directory)
                    .setCombined(true)
                    .setNumBrokerNodes(1)
                    .setNumControllerNodes(1)
                    .build())
                    .setConfigProp("auto.create.topics.enable", "true")
                    .setConfigProp("num.partitions", "3")
                    .setConfigProp("offsets.topic.replication.factor", "1")
                    .setConfigProp("offsets.topic.num.partitions", "1")
                    .setConfigProp("group.initial.rebalance.delay.ms", "0")
                    .setDeleteOnClose(true);
            brokerSettings.forEach(builder::setConfigProp);
            KafkaClusterTestKit cluster = builder.build();
            cluster.format();
            cluster.startup();
            cluster.waitForReadyBrokers();
            return new InProcessKafka(cluster);
        } catch (Exception e) {
            throw new IllegalStateException("cannot start an in-process Kafka broker", e);
        }
    }

    public String bootstrap() {
        return cluster.bootstrapServers();
    }

    /** Stops the broker (the controller keeps running), as a crash looks to clients. */
    public void stopBroker() {
        cluster.brokers().values().forEach(broker -> broker.shutdown());
        cluster.brokers().values().forEach(broker -> broker.awaitShutdown());
    }

    /** Starts the stopped broker again, on its old data and port. */
    public void restartBroker() {
        cluster.brokers().values().forEach(broker -> broker.startup());
        try {
            cluster.waitForReadyBrokers();
        } catch (Exception e) {
            throw new IllegalStateException("the in-process Kafka broker did not come back", e);
        }
    }

    @Override
    public void close() {
        try {
            cluster.close();
        } catch (Exception e) {
            throw new IllegalStateException("cannot stop the in-process Kafka broker", e);
        }
    }
}
