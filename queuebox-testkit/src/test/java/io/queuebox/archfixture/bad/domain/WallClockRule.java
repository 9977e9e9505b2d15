package io.queuebox.archfixture.bad.domain;

import java.time.Instant;
import java.time.LocalDateTime;

public final class WallClockRule {
    public Instant now() {
        return Instant.now();
    }

    public long millis() {
        return System.currentTimeMillis();
    }

    public LocalDateTime local() {
        return LocalDateTime.now();
    }
}
