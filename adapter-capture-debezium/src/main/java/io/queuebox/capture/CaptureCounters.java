package io.queuebox.capture;

import java.time.Clock;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

/** Counts shared by every run of the connectors one {@link DebeziumCapture} creates. */
final class CaptureCounters {
    final LongAdder wakeEvents = new LongAdder();
    final LongAdder ignoredEvents = new LongAdder();
    private final AtomicReference<Instant> lastEventAt = new AtomicReference<>();
    private final Clock clock;

    CaptureCounters(Clock clock) {
        this.clock = clock;
    }

    void markEvent() {
        lastEventAt.set(clock.instant());
    }

    CaptureStatistics snapshot() {
        return new CaptureStatistics(wakeEvents.sum(), ignoredEvents.sum(), java.util.Optional.ofNullable(lastEventAt.get()));
    }
}
