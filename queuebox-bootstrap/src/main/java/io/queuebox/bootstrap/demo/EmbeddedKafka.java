package io.queuebox.bootstrap.demo;

import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Path;
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

    String bootstrapServers() {
        return cluster.bootstrapServers();
    }

    @Override
    public void close() throws Exception {
        cluster.close();
    }
}
