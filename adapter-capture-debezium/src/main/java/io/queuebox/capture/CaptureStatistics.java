package io.queuebox.capture;

import java.time.Instant;
import java.util.Optional;

/**
 * What capture saw since the process started.
 *
 * @param wakeEvents    inserts and snapshot records of the outbox table, each of which woke delivery
 * @param ignoredEvents updates, deletes and tombstones of the outbox table, which wake nothing
 * @param lastEventAt   when the last wake event arrived
 */
public record CaptureStatistics(long wakeEvents, long ignoredEvents, Optional<Instant> lastEventAt) {
}
