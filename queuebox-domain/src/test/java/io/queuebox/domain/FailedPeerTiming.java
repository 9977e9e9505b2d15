package io.queuebox.domain;

import java.time.Duration;

/** What the reviews of a failed peer's claim after its pause share: the timing they tell the outcomes apart by. */
final class FailedPeerTiming {

    /** 16 intervals is the 2 s cap of the held-elsewhere back-off; the error pause is one interval. */
    static final Duration INTERVAL = Duration.ofMillis(125);
    /** Far below the stretched poll (2 s), far above the error pause (125 ms) plus a claim. */
    static final Duration WITHIN = Duration.ofMillis(1_000);

    private FailedPeerTiming() {
    }

    /** {@code workers} serial workers polling every {@link #INTERVAL}, quick retries, no purge. */
    static DeliverySettings.Builder workers(int workers) {
        return DeliverySettings.builder().workers(workers).pipelineDepth(1).wakeInterval(INTERVAL)
                .retryPolicy(EngineHarness.QUICK_RETRIES).purgeEnabled(false).shutdownDeadline(Duration.ofSeconds(1));
    }

    /** The index of the engine worker running this, 0 on any other thread. */
    static int worker() {
        String name = Thread.currentThread().getName();
        String prefix = "queuebox-worker-";
        return name.startsWith(prefix) && name.indexOf('-', prefix.length()) < 0
                ? Integer.parseInt(name.substring(prefix.length())) : 0;
    }
}
