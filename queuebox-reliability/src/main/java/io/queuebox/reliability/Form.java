package io.queuebox.reliability;

import java.time.Duration;

/**
 * How long and how hard the suite runs: the short form fits CI (about 8 minutes), the long form is what
 * issue 12 asks of a manual run (50 kills over 100,000 events, a 60 s broker outage, 30 s network cuts).
 */
record Form(String name, int kills, long killEvents, double transactionsPerSecond, Duration brokerOutage,
            Duration networkCut, Duration steady, Duration relayRunsAtMost) {

    static Form shortForm() {
        return new Form("short", 10, 0, 100, Duration.ofSeconds(15), Duration.ofSeconds(15),
                Duration.ofSeconds(6), Duration.ofSeconds(3));
    }

    static Form longForm() {
        return new Form("long", 50, 100_000, 150, Duration.ofSeconds(60), Duration.ofSeconds(30),
                Duration.ofSeconds(20), Duration.ofSeconds(6));
    }
}
