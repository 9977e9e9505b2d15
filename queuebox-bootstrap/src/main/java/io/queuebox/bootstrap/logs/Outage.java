package io.queuebox.bootstrap.logs;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * One dependency (the database, the broker) told as a story of two lines: "down" at the first failure,
 * "recovered after ..." when it works again. Failures while it is down add no line. It counts as back only
 * after {@code settle} without a failure, so that a restart seen by a few stale pooled connections, or a
 * broker that comes back piece by piece, is still one outage and not several.
 */
final class Outage {

    private final String name;
    private final Duration settle;
    private final Clock clock;
    private Instant downSince;
    private Instant lastFailure;
    private Instant workingSince;

    Outage(String name, Duration settle, Clock clock) {
        this.name = name;
        this.settle = settle;
        this.clock = clock;
    }

    String name() {
        return name;
    }

    synchronized boolean isDown() {
        return downSince != null;
    }

    /** The "down" line at the first failure of an outage; nothing while it lasts. */
    synchronized Optional<String> failed(String cause) {
        Instant now = clock.instant();
        lastFailure = now;
        workingSince = null;
        if (downSince != null) {
            return Optional.empty();
        }
        downSince = now;
        return Optional.of(name + " down: " + cause);
    }

    /** The "recovered" line once it has worked for {@code settle} without a failure; nothing otherwise. */
    synchronized Optional<String> worked() {
        if (downSince == null) {
            return Optional.empty();
        }
        Instant now = clock.instant();
        if (workingSince == null) {
            workingSince = now;
        }
        if (Duration.between(lastFailure, now).compareTo(settle) < 0) {
            return Optional.empty();
        }
        Duration down = Duration.between(downSince, workingSince);
        downSince = null;
        workingSince = null;
        return Optional.of(name + " recovered after " + FailureSummary.seconds(down));
    }
}
