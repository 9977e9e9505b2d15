package io.queuebox.archfixture.good.domain;

import io.queuebox.archfixture.good.ports.Port;
import java.time.Clock;
import java.time.Instant;

public final class Rule {
    private final Port port;
    private final Clock clock;

    public Rule(Port port, Clock clock) {
        this.port = port;
        this.clock = clock;
    }

    public Instant deadline() {
        return Instant.now(clock).plus(port.timeout());
    }
}
