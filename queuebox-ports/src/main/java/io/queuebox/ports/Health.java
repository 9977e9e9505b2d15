package io.queuebox.ports;

import java.util.Map;
import java.util.Objects;

/**
 * The health of one component, as readiness reports it.
 *
 * @param status  up or down
 * @param detail  one line for a person: why it is down, or what it is doing
 * @param details further facts (counts, positions) for the JSON answer; never secrets
 */
public record Health(Status status, String detail, Map<String, Object> details) {

    public enum Status { UP, DOWN }

    /**
     * The key of {@link #details()} under which a publisher lists the destinations (topics, exchanges) that
     * the broker says do not exist, as a map from destination name to reason. Metrics name them from there.
     */
    public static final String MISSING_DESTINATIONS = "missingDestinations";

    public Health {
        Objects.requireNonNull(status, "status");
        Objects.requireNonNull(detail, "detail");
        details = Map.copyOf(details);
    }

    public static Health up(String detail) {
        return new Health(Status.UP, detail, Map.of());
    }

    public static Health down(String detail) {
        return new Health(Status.DOWN, detail, Map.of());
    }

    public boolean isUp() {
        return status == Status.UP;
    }

    public Health withDetails(Map<String, Object> moreDetails) {
        return new Health(status, detail, moreDetails);
    }
}
