package io.queuebox.reliability;

import static io.queuebox.reliability.Scenarios.event;
import static io.queuebox.reliability.Trial.workload;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import io.queuebox.ports.OutboxEvent;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.common.config.ConfigResource;

/**
 * 6: poison events parked after the configured attempts while every other aggregate keeps flowing, then
 * replayed with the CLI once the cause is fixed, and delivered in their aggregate's order. Each poison
 * aggregate has a second, healthy event behind the poison one, which must wait for it.
 */
final class PoisonScenarios {

    private static final int POISON_AGGREGATES = 3;

    /** Retries fast so that a retriable poison parks within seconds. */
    private static final Map<String, String> FAST_PARKING = Map.of(
            "outbox.retry.initialMs", "200", "outbox.retry.maxMs", "1000", "outbox.retry.maxAttempts", "3");

    /** 6a: RabbitMQ, an exchange no queue is bound to (returned as unroutable: permanent). */
    static Trial.Outcome rabbit(Bed bed, Form form) throws Exception {
        try (Trial trial = new Trial(bed, "poison-rabbitmq", "rabbitmq")) {
            String unroutable = trial.exchange() + "_unroutable";
            ConnectionFactory factory = new ConnectionFactory();
            factory.setUri(bed.rabbitUri(Bed.RABBIT_PORT));
            try (com.rabbitmq.client.Connection connection = factory.newConnection("queuebox-reliability-admin");
                 Channel channel = connection.createChannel()) {
                channel.exchangeDeclare(unroutable, "topic", false, true, null);
                trial.startRelay(FAST_PARKING);
                trial.produce(workload(form.transactionsPerSecond(), 61));
                List<OutboxEvent> poison = poison("unroutable", unroutable, 200);
                Scenarios.write(trial, poison);
                awaitParkedAndOthersFlowing(trial, POISON_AGGREGATES);
                channel.queueBind(trial.queue(), unroutable, "#"); // the fix: a queue takes the messages now
                replay(trial);
                trial.faultEnded();
                Thread.sleep(form.steady().toMillis());
                Trial.Outcome outcome = trial.finish(Duration.ofMinutes(2));
                channel.exchangeDelete(unroutable);
                return outcome;
            }
        }
    }

    /** 6b: Kafka, a payload over the topic's max.message.bytes (permanent) and a topic that does not exist (retriable). */
    static Trial.Outcome kafka(Bed bed, Form form) throws Exception {
        try (Trial trial = new Trial(bed, "poison-kafka", "kafka")) {
            String bootstrap = bed.kafka().bootstrap();
            String small = trial.topic() + "-small";
            String missing = trial.topic() + "-missing";
            KafkaConsumerLoop.createTopic(bootstrap, small, Map.of("max.message.bytes", "2048"));
            trial.startRelay(FAST_PARKING);
            trial.produce(workload(form.transactionsPerSecond(), 62));
            List<OutboxEvent> poison = new ArrayList<>(poison("too-large", small, 8192));
            poison.addAll(poison("no-topic", missing, 200));
            Scenarios.write(trial, poison);
            awaitParkedAndOthersFlowing(trial, 2 * POISON_AGGREGATES);
            // The fix: the topic takes larger records, the missing one exists.
            try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
                ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, small);
                Map<ConfigResource, Collection<AlterConfigOp>> change = new HashMap<>();
                change.put(resource, List.of(new AlterConfigOp(new ConfigEntry("max.message.bytes", "1048576"),
                        AlterConfigOp.OpType.SET)));
                admin.incrementalAlterConfigs(change).all().get();
            }
            KafkaConsumerLoop.createTopic(bootstrap, missing, Map.of());
            trial.closeLater(new KafkaConsumerLoop(bootstrap, List.of(small, missing), trial.receipts));
            replay(trial);
            trial.faultEnded();
            Thread.sleep(form.steady().toMillis());
            return trial.finish(Duration.ofMinutes(2));
        }
    }

    /** Per poison aggregate: the poison event, then a healthy one to the same destination behind it. */
    private static List<OutboxEvent> poison(String kind, String destination, int payloadBytes) {
        List<OutboxEvent> events = new ArrayList<>();
        for (int i = 0; i < POISON_AGGREGATES; i++) {
            String aggregate = kind + "-" + i;
            events.add(event(aggregate, destination, payloadBytes));
            events.add(event(aggregate, destination, 100));
        }
        return events;
    }

    /**
     * Waits until the poison events are parked, then checks that every event of other aggregates written
     * so far was delivered while they sat there (they held back only their own aggregates).
     */
    private static void awaitParkedAndOthersFlowing(Trial trial, int parked) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (trial.count("status = 'parked'") < parked) {
            if (System.nanoTime() > deadline) {
                trial.failures.add("only " + trial.count("status = 'parked'") + " of " + parked
                        + " poison events were parked within 60 s");
                return;
            }
            Thread.sleep(250);
        }
        trial.notes.put("parked", trial.count("status = 'parked'"));
        trial.notes.put("heldBehindParked", trial.count("status = 'pending' AND aggregate_id NOT LIKE 'a%'"));
        // Judged by when rows became visible, not by created_at: that is the writer's transaction start (now()),
        // and a transaction held open or queued behind an aggregate's lock commits seconds after it.
        long checkFrom = System.nanoTime();
        String otherPending = "status = 'pending' AND aggregate_id LIKE 'a%'";
        Set<UUID> pendingAtPark = trial.eventIds(otherPending);
        Thread.sleep(6000);
        Set<UUID> stale = new HashSet<>(trial.eventIds(otherPending));
        stale.retainAll(pendingAtPark);
        trial.notes.put("otherAggregatesPendingAtPark", pendingAtPark.size());
        if (!stale.isEmpty()) {
            trial.failures.add(stale.size() + " events of other aggregates, committed before the poison was parked,"
                    + " stayed pending for 6 s while it was (held back by it?)");
        }
        trial.notes.put("secondsCheckedWhileParked", Math.round((System.nanoTime() - checkFrom) / 1e8) / 10.0);
    }

    /** The operator's fix: {@code queuebox outbox replay --all-parked}, through the jar. */
    private static void replay(Trial trial) throws Exception {
        Map<String, String> config = new HashMap<>(trial.relayConfig());
        RelayProcess.Result replay = RelayProcess.runCommand(trial.bed.jar, trial.bed.workDir,
                trial.name + "-replay", config, "outbox", "replay", "--all-parked");
        trial.notes.put("replayExitCode", replay.exitCode());
        trial.notes.put("replayOutput", replay.output().lines().filter(line -> line.contains("replayed"))
                .findFirst().orElse(replay.output().strip()));
        if (replay.exitCode() != 0) {
            trial.failures.add("outbox replay --all-parked exited " + replay.exitCode() + ": " + replay.output());
        }
    }

    private PoisonScenarios() {
    }
}
