package io.queuebox.testkit;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A {@link Clock} that stands still until a test moves it. Safe to read and move from several threads;
 * clocks obtained through {@link #withZone} share the same instant, so moving one moves them all.
 */
public final class MutableClock extends Clock {

    /** Where {@link #create()} starts: a fixed, unremarkable instant so test output is reproducible. */
    public static final Instant DEFAULT_START = Instant.parse("2026-01-01T00:00:00Z");

    private final AtomicReference<Instant> now;
    private final ZoneId zone;

    private MutableClock(AtomicReference<Instant> now, ZoneId zone) {
        this.now = now;
        this.zone = zone;
    }

    /** A clock at {@link #DEFAULT_START} in UTC. */
    public static MutableClock create() {
        return at(DEFAULT_START);
    }

    /** A clock at {@code start} in UTC. */
    public static MutableClock at(Instant start) {
        return new MutableClock(new AtomicReference<>(Objects.requireNonNull(start, "start")), ZoneOffset.UTC);
    }

    /** Moves the clock to {@code instant} (backwards too, to simulate a clock step). */
    public void set(Instant instant) {
        now.set(Objects.requireNonNull(instant, "instant"));
    }

    /** Moves the clock forward by {@code amount} and returns the new time. */
    public Instant advance(Duration amount) {
        Objects.requireNonNull(amount, "amount");
        return now.updateAndGet(current -> current.plus(amount));
    }

    /** Moves the clock forward by {@code millis} milliseconds and returns the new time. */
    public Instant advanceMillis(long millis) {
        return advance(Duration.ofMillis(millis));
    }

    @Override
    public Instant instant() {
        return now.get();
    }

    @Override
    public ZoneId getZone() {
        return zone;
    }

    @Override
    public Clock withZone(ZoneId newZone) {
        return new MutableClock(now, Objects.requireNonNull(newZone, "zone"));
    }

    @Override
    public String toString() {
        return "MutableClock[" + now.get() + ", " + zone + "]";
    }
}
