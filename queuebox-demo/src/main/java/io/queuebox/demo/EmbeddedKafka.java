package io.queuebox.demo;

import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.test.KafkaClusterTestKit;
import org.apache.kafka.common.test.TestKitNodes;

/** A real Kafka broker (KRaft, combined broker and controller) inside this JVM, with its data in {@code directory}. */
final class EmbeddedKafka implements AutoCloseable {

    private final KafkaClusterTestKit cluster;

    private EmbeddedKafka(KafkaClusterTestKit cluster) {
        this.cluster = cluster;
    }

    static EmbeddedKafka start(Path directory) {
        try {
            KafkaClusterTestKit cluster = new KafkaClusterTestKit.Builder(new TestKitNodes.Builder()
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
                    .build();
            formatQuietly(cluster);
            cluster.startup();
            cluster.waitForReadyBrokers();
            return new EmbeddedKafka(cluster);
        } catch (Exception e) {
            throw new IllegalStateException("cannot start the embedded Kafka broker", e);
        }
    }

    /** Kafka's storage formatter prints to standard output; the demo's own lines are the ones that matter. */
    private static void formatQuietly(KafkaClusterTestKit cluster) throws Exception {
        PrintStream original = System.out;
        System.setOut(new PrintStream(OutputStream.nullOutputStream()));
        try {
            cluster.format();
        } finally {
            System.setOut(original);
        }
    }

    /** Creates the topic up front, so the first publish and the consumer need not wait for auto-creation. */
    void createTopic(String name, int partitions) {
        try (Admin admin = Admin.create(Map.<String, Object>of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers()))) {
            admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all().get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("cannot create topic " + name, e);
        }
    }

    String bootstrapServers() {
        return cluster.bootstrapServers();
    }

    @Override
    public void close() throws Exception {
        cluster.close();
    }
}
