package io.queuebox.kafka;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.common.KafkaFuture;

/**
 * Asks the cluster whether it answers at all ({@code describeCluster}) without sending a record. While the
 * publisher believes Kafka is down it sends nothing, so that no event is charged an attempt for the outage;
 * this is how it notices that Kafka is back. The admin client (same connection and security settings as the
 * producer) is created on the first outage and kept until the publisher closes.
 */
final class ClusterProbe implements AutoCloseable {

    private final Map<String, Object> adminConfig;
    private final int timeoutMs;
    private final Consumer<Throwable> onResult;
    private Admin admin;
    private KafkaFuture<String> running;
    private boolean closed;

    /** {@code onResult} hears every probe's end: null when the cluster answered, else why not. */
    ClusterProbe(Map<String, Object> producerProperties, int timeoutMs, Consumer<Throwable> onResult) {
        Set<String> adminKeys = AdminClientConfig.configNames();
        Map<String, Object> config = new LinkedHashMap<>();
        producerProperties.forEach((key, value) -> {
            if (adminKeys.contains(key)) {
                config.put(key, value);
            }
        });
        config.put(AdminClientConfig.CLIENT_ID_CONFIG, producerProperties.getOrDefault("client.id", "queuebox") + "-probe");
        this.adminConfig = Map.copyOf(config);
        this.timeoutMs = timeoutMs;
        this.onResult = onResult;
    }

    /** Starts a probe unless one runs; returns at once. */
    synchronized void start() {
        if (closed || (running != null && !running.isDone())) {
            return;
        }
        try {
            if (admin == null) {
                admin = Admin.create(adminConfig);
            }
            running = admin.describeCluster(new DescribeClusterOptions().timeoutMs(timeoutMs)).clusterId();
            running.whenComplete((clusterId, failure) -> onResult.accept(failure));
        } catch (RuntimeException e) {
            onResult.accept(e);
        }
    }

    @Override
    public synchronized void close() {
        closed = true;
        if (admin != null) {
            admin.close(java.time.Duration.ofSeconds(1));
        }
    }
}
