package io.queuebox.kafka;

import io.queuebox.ports.Health;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What the publisher knows about Kafka between calls: whether the cluster is down (then calls send nothing
 * until a probe gets an answer) and which topics are missing or refused, for health and for answering their
 * records at once instead of waiting for metadata again in every call.
 */
final class KafkaHealth {

    /**
     * A topic problem nobody ran into again for this long no longer shows: its events were parked or deleted.
     * Twice the longest default backoff (5 min), so a topic whose events are still retried keeps showing.
     */
    static final long FORGET_AFTER_MS = 10 * 60_000;

    private record TopicProblem(boolean missing, String reason, long atMs) {
    }

    private final Map<String, TopicProblem> topics = new ConcurrentHashMap<>();
    private volatile String outage;
    private volatile String lastUp = "no message sent yet";

    /** Kafka looks down, or refuses the relay: calls answer "not attempted" until {@link #answered()}. */
    void outage(String reason) {
        outage = reason;
    }

    /** Why Kafka is down, or null. */
    String outage() {
        return outage;
    }

    /** The cluster answered (a record was acked, a probe succeeded). */
    void answered() {
        outage = null;
    }

    void acked() {
        outage = null;
        lastUp = "last send acknowledged";
    }

    void topicMissing(String topic, String reason, long nowMs) {
        topics.put(topic, new TopicProblem(true, reason, nowMs));
    }

    void topicNotAuthorized(String topic, String reason, long nowMs) {
        topics.put(topic, new TopicProblem(false, reason, nowMs));
    }

    /** Metadata for the topic arrived: it exists and may be written. */
    void topicFound(String topic) {
        topics.remove(topic);
    }

    /** Why the topic was found missing recently, if it was. */
    Optional<String> missing(String topic, long nowMs) {
        TopicProblem problem = topics.get(topic);
        return problem != null && problem.missing() && nowMs - problem.atMs() < FORGET_AFTER_MS
                ? Optional.of(problem.reason()) : Optional.empty();
    }

    Health health(long nowMs) {
        Map<String, String> missing = new TreeMap<>();
        Map<String, String> refused = new TreeMap<>();
        topics.forEach((topic, problem) -> {
            if (nowMs - problem.atMs() < FORGET_AFTER_MS) {
                (problem.missing() ? missing : refused).put(topic, problem.reason());
            }
        });
        Map<String, Object> details = missing.isEmpty() ? Map.of() : Map.of(Health.MISSING_DESTINATIONS, missing);
        String down = outage;
        if (down != null) {
            return Health.down(down).withDetails(details);
        }
        if (missing.isEmpty() && refused.isEmpty()) {
            return Health.up(lastUp);
        }
        StringBuilder detail = new StringBuilder();
        if (!missing.isEmpty()) {
            detail.append("missing topic(s) ").append(missing.keySet())
                    .append(": their events are retried with backoff until the topic exists");
        }
        if (!refused.isEmpty()) {
            detail.append(detail.length() > 0 ? "; " : "").append("not authorized to write to topic(s) ")
                    .append(refused.keySet()).append(": their events wait, uncharged (")
                    .append(refused.values().iterator().next()).append(')');
        }
        return Health.down(detail.toString()).withDetails(details);
    }
}
