package io.queuebox.bootstrap.logs;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.StringJoiner;

/**
 * Failures of one subject (publishes, claims) counted by kind and told as one line, at most one line per
 * window: "2,795 publishes failed in the last 30 s: 2,780 not attempted (RabbitMQ unavailable: ...), 15
 * retriable (nacked by RabbitMQ)". A flood of failures then costs the log one line per window, and the
 * first failure after a quiet spell is told at once, so a new fault is not hidden for a whole window.
 */
final class FailureSummary {

    private final String singular;
    private final String plural;
    private final Duration window;
    private final Clock clock;
    private final Map<String, Tally> pending = new LinkedHashMap<>();
    private Instant since;
    private Instant lastLine;

    FailureSummary(String singular, String plural, Duration window, Clock clock) {
        this.singular = singular;
        this.plural = plural;
        this.window = window;
        this.clock = clock;
    }

    /**
     * Counts {@code count} failures of {@code kind} (empty for a subject with one kind); the first cause of
     * each kind is the one told.
     */
    synchronized void add(String kind, long count, String cause) {
        if (count <= 0) {
            return;
        }
        if (pending.isEmpty()) {
            since = clock.instant();
        }
        Tally tally = pending.computeIfAbsent(kind, k -> new Tally());
        tally.count += count;
        if (tally.cause == null) {
            tally.cause = cause;
        }
    }

    /**
     * The line to log right after a failure: only when no line was logged within the window. A caller that
     * knows a "down" line already told the cause does not ask, and the failures wait for {@link #due()}.
     */
    synchronized Optional<String> atOnce() {
        Instant now = clock.instant();
        if (pending.isEmpty() || (lastLine != null && now.isBefore(lastLine.plus(window)))) {
            return Optional.empty();
        }
        return Optional.of(line(now));
    }

    /** The line to log on a periodic tick: once the pending failures span a window. */
    synchronized Optional<String> due() {
        Instant now = clock.instant();
        if (pending.isEmpty()) {
            return Optional.empty();
        }
        return now.isBefore(from().plus(window)) ? Optional.empty() : Optional.of(line(now));
    }

    /** Whatever is pending, now: when a dependency is back, and at shutdown. */
    synchronized Optional<String> flush() {
        return pending.isEmpty() ? Optional.empty() : Optional.of(line(clock.instant()));
    }

    private String line(Instant now) {
        long total = pending.values().stream().mapToLong(t -> t.count).sum();
        StringJoiner kinds = new StringJoiner(", ");
        // A subject with one kind of failure (claims) is told by its cause alone.
        pending.forEach((kind, tally) -> kinds.add(kind.isEmpty() ? String.valueOf(tally.cause)
                : count(tally.count) + " " + kind + (tally.cause == null ? "" : " (" + tally.cause + ")")));
        Duration span = Duration.between(from(), now);
        String line = count(total) + " " + (total == 1 ? singular : plural) + " failed"
                + (span.compareTo(Duration.ofSeconds(1)) < 0 ? "" : " in the last " + seconds(span)) + ": " + kinds;
        pending.clear();
        lastLine = now;
        return line;
    }

    /** While failures go on, a line covers the time since the previous one; after a quiet spell, since the first. */
    private Instant from() {
        return lastLine != null && !since.isAfter(lastLine.plus(window)) ? lastLine : since;
    }

    static String count(long n) {
        return String.format(Locale.ROOT, "%,d", n);
    }

    static String seconds(Duration span) {
        long tenths = Math.round(span.toMillis() / 100.0);
        return tenths % 10 == 0 ? tenths / 10 + " s" : String.format(Locale.ROOT, "%.1f s", tenths / 10.0);
    }

    private static final class Tally {
        long count;
        String cause;
    }
}
