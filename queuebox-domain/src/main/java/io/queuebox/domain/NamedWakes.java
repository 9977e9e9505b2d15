package io.queuebox.domain;

import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.WakeReason;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

/**
 * Wake-ups that name their row, checked against the engine's own claims. A row this engine claimed recently
 * needs no claim. A row named while a claim is under way is held for that claim: it may be taking the row
 * (the log reports a row a few milliseconds after it committed, when a claim often started already), and a
 * second claimer would find it locked. A held row is settled by the first claim that started after it was
 * named, or when no claim is under way any more, and wakes the engine then if no claim took it. A claim
 * that does not return within {@link #HOLD_LIMIT} stops holding: {@link #expireHeld} turns what it held into
 * one wake-up, so one worker's hung claim never keeps a row from the others. A busy worker's second look after its
 * batch holds rows the same way, for a peer's claim that started after they were named
 * ({@link #unclaimedNewsAfter(long, boolean, boolean)}).
 */
final class NamedWakes {

    /** How long a row is held for a claim under way before idle workers look for it themselves. */
    static final Duration HOLD_LIMIT = Duration.ofMillis(20);

    private final int capacity;
    private final long holdLimitNanos;
    // Made at the first wake-up that names a row: an engine no source names rows to (polling, notify, a drain)
    // pays nothing per claimed row.
    private RecentClaims recent;
    // held row -> the claims it is held for
    private final Map<UUID, Hold> held = new LinkedHashMap<>();
    private long heldSinceNanos;
    private WakeReason heldReason;
    private WakeReason skippedReason = WakeReason.CAPTURE;
    private long claimsStarted;
    // claim number -> when it started, for the claims under way (at most one per worker)
    private final Map<Long, Long> underWay = new LinkedHashMap<>();
    // row whose named wake-up woke the engine, not claimed here since -> that wake-up's news number, and the claims
    // started when it was named. Rows another relay claimed stay until pushed out; one pushed out unclaimed leaves its
    // number in untrackedNews.
    private final Map<UUID, Awaiting> awaitingClaim = new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<UUID, Awaiting> eldest) {
            if (size() <= AWAITING_CLAIM_LIMIT) {
                return false;
            }
            // A row whose number has not come yet counts when it comes (numbered); one whose number never comes (its
            // waker failed in between) is about news no later than the latest numbered.
            long news = eldest.getValue().news();
            untrackedNews = Math.max(untrackedNews, news == UNNUMBERED ? latestNumbered : news);
            return true;
        }
    };

    /**
     * A held row is held for the claims numbered after {@code claimsBefore}; {@code forAskedLook}: among them the look a
     * publish stage asked its claimer for (unclaimedNewsAfter's askingALook).
     */
    private record Hold(long claimsBefore, boolean forAskedLook) {
    }

    /** A named row that woke the engine: its news number, the claims started before it was named, and its reason. */
    private record Awaiting(long news, long claimsBefore, WakeReason reason) {
        Awaiting numbered(long number) {
            return new Awaiting(number, claimsBefore, reason);
        }
    }
    private long untrackedNews;
    private long latestNumbered;

    private static final long UNNUMBERED = Long.MAX_VALUE;

    private static final int AWAITING_CLAIM_LIMIT = 4096;

    /** Remembers up to {@code capacity} claimed rows and holds rows for a claim up to {@link #HOLD_LIMIT}. */
    NamedWakes(int capacity) {
        this(capacity, HOLD_LIMIT);
    }

    NamedWakes(int capacity, Duration holdLimit) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be at least 1, got " + capacity);
        }
        this.capacity = capacity;
        this.holdLimitNanos = holdLimit.toNanos();
    }

    /**
     * A wake-up names {@code eventId}: answers whether to wake the engine now. When it answers false and
     * holds the row, the caller makes sure {@link #expireHeld} runs once the hold limit has passed. The row is
     * held for a claim under way only when {@code mayHold}: a row named right after its commit cannot be in a
     * claim that was under way then.
     */
    synchronized boolean arrived(UUID eventId, WakeReason reason, boolean mayHold) {
        if (recent == null) {
            recent = new RecentClaims(capacity);
        }
        if (recent.skipWakeFor(eventId)) {
            skippedReason = reason;
            return false;
        }
        if (!mayHold) {
            return awaitsClaim(eventId, reason);
        }
        long now = System.nanoTime();
        if (underWay.values().stream().noneMatch(start -> now - start < holdLimitNanos)) {
            return awaitsClaim(eventId, reason); // no claim to wait for, or only ones too slow to wait for
        }
        hold(eventId, claimsStarted, reason, now);
        return false;
    }

    /**
     * A row whose wake-up wakes the engine: remembered until a claim of this engine takes it, so that a busy
     * worker knows whether news may be about a row its own batch held back ({@link #unclaimedNewsAfter}). It is
     * remembered before the news is made, so no worker can see the news without the row; until
     * {@link #numbered} gives it the news number it counts as later than any news.
     */
    private boolean awaitsClaim(UUID eventId, WakeReason reason) {
        awaitingClaim.put(eventId, new Awaiting(UNNUMBERED, claimsStarted, reason));
        return true;
    }

    /** The rows of a wake-up that woke the engine as news number {@code news}, unless a claim took them already. */
    synchronized void numbered(Collection<UUID> eventIds, long news) {
        latestNumbered = Math.max(latestNumbered, news);
        for (UUID id : eventIds) {
            if (awaitingClaim.computeIfPresent(id, (row, awaiting) -> awaiting.numbered(news)) == null
                    && !recent.contains(id)) {
                // Pushed out before its number came (a commit naming more rows than the bound): this news is
                // about a row nobody tracks, which a busy worker's batch may hold back.
                untrackedNews = Math.max(untrackedNews, news);
            }
        }
    }

    /**
     * Whether news later than {@code news} named a row no claim of this engine has taken since (or whose tracking was
     * given up): a claim that started before the news, or one that found the row held back, missed it. Asked by a
     * worker whose batch was out since {@code news} and was just recorded. With {@code holdForClaimsUnderWay}, a row for which a claim that started after it was named is still under way
     * (and not past the hold limit) does not count: it is held for that claim instead, as a row the log reports is.
     * That claim looked at the table after the row's commit: it takes the row, or found it held back by the batch just
     * recorded, and then its end (or the hold limit) wakes the engine. Looking again beside it, one of the two claims
     * could only come back empty (the bench's after-commit cell at 200 events/s). Nor, then, does a row held for a look
     * another publish stage asked for. Answers false when every such row is
     * held; the caller then makes sure {@link #expireHeld} runs once the hold limit has passed.
     *
     * <p>With {@code askingALook} (a publish stage, whose claimer starts the look on another thread) an answer of true
     * holds the rows of the later news for that look at once, in the same step: a second stage that records its batch
     * before the claimer's look started then leaves them to it instead of asking for a look too.
     */
    synchronized boolean unclaimedNewsAfter(long news, boolean holdForClaimsUnderWay, boolean askingALook) {
        long now = System.nanoTime();
        boolean unclaimed = untrackedNews > news;
        List<Map.Entry<UUID, Awaiting>> later = null;
        for (Iterator<Map.Entry<UUID, Awaiting>> it = awaitingClaim.entrySet().iterator(); !unclaimed && it.hasNext(); ) {
            Map.Entry<UUID, Awaiting> entry = it.next();
            if (entry.getValue().news() <= news
                    || holdForClaimsUnderWay && heldForAnAskedLook(entry.getKey(), now)) {
                continue;
            }
            if (!holdForClaimsUnderWay || !claimUnderWaySince(entry.getValue().claimsBefore(), now)) {
                unclaimed = true; // the look covers every row, so none is held for a claim under way
            } else {
                if (later == null) {
                    later = new ArrayList<>();
                }
                later.add(entry);
            }
        }
        if (unclaimed) {
            if (askingALook) {
                holdForTheAskedLook(news, now);
            }
            return true;
        }
        for (Map.Entry<UUID, Awaiting> entry : later == null ? List.<Map.Entry<UUID, Awaiting>>of() : later) {
            hold(entry.getKey(), entry.getValue().claimsBefore(), entry.getValue().reason(), now);
        }
        return false;
    }

    /** Holds the rows of news later than {@code news} for a look a publish stage asks its claimer for. */
    private void holdForTheAskedLook(long news, long now) {
        for (Map.Entry<UUID, Awaiting> entry : awaitingClaim.entrySet()) {
            if (entry.getValue().news() > news) {
                hold(entry.getKey(), claimsStarted, entry.getValue().reason(), now);
                held.computeIfPresent(entry.getKey(), (row, hold) -> new Hold(hold.claimsBefore(), true));
            }
        }
    }

    /** Whether {@code row} is held for a look a publish stage asked for, within the hold limit. */
    private boolean heldForAnAskedLook(UUID row, long now) {
        Hold hold = held.get(row);
        return hold != null && hold.forAskedLook() && now - heldSinceNanos < holdLimitNanos;
    }

    /** Whether a claim numbered after {@code claimsBefore} is under way and younger than the hold limit. */
    private boolean claimUnderWaySince(long claimsBefore, long now) {
        for (Map.Entry<Long, Long> claim : underWay.entrySet()) {
            if (claim.getKey() > claimsBefore && now - claim.getValue() < holdLimitNanos) {
                return true;
            }
        }
        return false;
    }

    /**
     * Whether every row that named news woke the engine for was claimed here since, or is held for a claim under way
     * (within the hold limit, after which the claim watch wakes the engine for it), and none was given up on: a ticket
     * that only such news offered then asks for a claim that can only come back empty, and a held row that the claim
     * does not take wakes the engine itself when it is settled.
     */
    synchronized boolean noNamedRowAwaitsAClaim() {
        if (untrackedNews != 0) {
            return false;
        }
        if (awaitingClaim.isEmpty()) {
            return true;
        }
        if (held.isEmpty() || System.nanoTime() - heldSinceNanos >= holdLimitNanos) {
            return false;
        }
        return held.keySet().containsAll(awaitingClaim.keySet());
    }

    /** Whether rows are held. */
    synchronized boolean holding() {
        return !held.isEmpty();
    }

    /** Until the rows held have waited the hold limit, if any are held. */
    synchronized Optional<Duration> untilHeldExpire() {
        if (held.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(Duration.ofNanos(holdLimitNanos - (System.nanoTime() - heldSinceNanos)));
    }

    /**
     * Stops holding rows that waited the hold limit: answers the reason to wake the engine with (once, for
     * all of them) when one is still unclaimed, else null.
     */
    synchronized WakeReason expireHeld() {
        if (held.isEmpty() || System.nanoTime() - heldSinceNanos < holdLimitNanos) {
            return null;
        }
        boolean unclaimed = settleAll(held.keySet());
        held.clear();
        return unclaimed ? heldReason : null;
    }

    /** A claim starts: answers its number, for {@link #claimEnded}. */
    synchronized long claimStarted() {
        long number = ++claimsStarted;
        underWay.put(number, System.nanoTime());
        return number;
    }

    /**
     * A serial worker's second look after its batch starts ({@link #claimStarted()}), for news later than
     * {@code news}: the rows that news named and no claim took are held for this claim, so that an idle worker that
     * takes their ticket does not claim beside it ({@link #noNamedRowAwaitsAClaim}); this claim's end settles them,
     * and should it not return within the hold limit the claim watch wakes the engine for them, so a hung second look
     * keeps no row from the idle workers longer than that.
     */
    synchronized long secondLookStarted(long news) {
        long number = claimStarted();
        long now = System.nanoTime();
        for (Map.Entry<UUID, Awaiting> entry : awaitingClaim.entrySet()) {
            if (entry.getValue().news() > news) {
                hold(entry.getKey(), number - 1, entry.getValue().reason(), now);
            }
        }
        return number;
    }

    /** Holds {@code row} for the claims numbered after {@code claimsBefore}. */
    private void hold(UUID row, long claimsBefore, WakeReason reason, long now) {
        if (held.isEmpty()) {
            heldSinceNanos = now;
        }
        held.putIfAbsent(row, new Hold(claimsBefore, false));
        heldReason = reason;
    }

    /**
     * Claim {@code number} returned {@code claimed} (empty when it failed): answers the reason to wake the
     * engine with when rows it settled are still unclaimed, else null. It settles the rows named before it
     * started (it looked at the table after their news), and all rows once no claim is under way.
     */
    synchronized WakeReason claimEnded(long number, List<ClaimedDelivery> claimed) {
        if (recent != null) {
            for (ClaimedDelivery delivery : claimed) {
                recent.claimed(delivery.eventId());
            }
        }
        if (!awaitingClaim.isEmpty()) {
            for (ClaimedDelivery delivery : claimed) {
                if (awaitingClaim.remove(delivery.eventId()) != null) {
                    recent.namedBeforeItsClaim(delivery.eventId());
                }
            }
        }
        underWay.remove(number);
        if (held.isEmpty()) {
            return null; // the common case: nothing to settle, nothing allocated on the claim path
        }
        List<UUID> settled = new ArrayList<>();
        for (Iterator<Map.Entry<UUID, Hold>> it = held.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<UUID, Hold> entry = it.next();
            if (underWay.isEmpty() || number > entry.getValue().claimsBefore()) {
                settled.add(entry.getKey());
                it.remove();
            }
        }
        return settleAll(settled) ? heldReason : null;
    }

    /**
     * Settles held rows: a claimed one counts as a skipped wake-up (its release wakes the engine); answers
     * whether one is unclaimed.
     */
    private boolean settleAll(Collection<UUID> rows) {
        boolean unclaimed = false;
        for (UUID row : rows) {
            if (recent.skipWakeFor(row)) {
                skippedReason = heldReason;
            } else {
                unclaimed = true;
            }
        }
        return unclaimed;
    }

    /**
     * Released rows are due again: a wake-up naming one wakes the engine. Answers the reason to wake the engine
     * with when a wake-up about one of them was skipped while it was claimed (it would otherwise wait the
     * interval), else null. Released rows that a wake-up named before their claim await a claim again.
     */
    synchronized WakeReason released(Collection<UUID> eventIds) {
        if (recent == null) {
            return null;
        }
        List<UUID> named = new ArrayList<>();
        boolean skipped = recent.released(eventIds, named);
        for (UUID row : named) {
            // Due again: a ticket its news left must not be skipped as if a claim had taken it (review of e0a07ec).
            // As news 0, no later than any batch's: another relay may take the row, and then no second look should
            // ever be made for it (DeliveryEngineNamedNewsReview2Test).
            awaitingClaim.put(row, new Awaiting(0, claimsStarted, WakeReason.EXTERNAL));
        }
        return skipped ? skippedReason : null;
    }
}
