package io.queuebox.bootstrap.logs;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * Lines that each need an operator (a parked event) are logged one by one, but only the first
 * {@code perWindow} of a window: a flood of them is then counted instead of burying everything else.
 */
final class LineBudget {

    /** What was not logged in a window that is over. */
    record Suppressed(long count, Duration over) {
    }

    private final int perWindow;
    private final Duration window;
    private final Clock clock;
    private Instant windowStart;
    private int used;
    private long suppressed;

    LineBudget(int perWindow, Duration window, Clock clock) {
        this.perWindow = perWindow;
        this.window = window;
        this.clock = clock;
    }

    /** Whether this line may be logged; if not, it is counted. */
    synchronized boolean tryAcquire() {
        if (windowStart == null) {
            windowStart = clock.instant();
        }
        if (used < perWindow) {
            used++;
            return true;
        }
        suppressed++;
        return false;
    }

    /** Ends the window when it is over, with the count of what was not logged in it (if anything). */
    synchronized Optional<Suppressed> roll() {
        if (windowStart == null || clock.instant().isBefore(windowStart.plus(window))) {
            return Optional.empty();
        }
        return end();
    }

    /** Ends the window now (shutdown). */
    synchronized Optional<Suppressed> flush() {
        return windowStart == null ? Optional.empty() : end();
    }

    private Optional<Suppressed> end() {
        Duration over = Duration.between(windowStart, clock.instant());
        long count = suppressed;
        windowStart = null;
        used = 0;
        suppressed = 0;
        return count == 0 ? Optional.empty() : Optional.of(new Suppressed(count, over));
    }
}
