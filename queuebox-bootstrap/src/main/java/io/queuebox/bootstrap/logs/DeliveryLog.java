package io.queuebox.bootstrap.logs;

import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.DeliveryListener;
import io.queuebox.ports.Health;
import io.queuebox.ports.LeaseToken;
import io.queuebox.ports.PublishOutcome;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What an operator reads in the log while delivery runs: one line when the database or the broker goes
 * down and one when it is back, a count of the failures in between (at most one line per kind per
 * window), each parking (the first ten of a window) and lost lease. Expected faults never bring a stack
 * trace above DEBUG: the operator needs the cause, not QueueBox's call stack.
 *
 * <p>The engine's events feed it; {@link DependencyWatch} adds the health of the database and the broker
 * (a dependency can fail while nothing is being claimed or published) and the periodic {@link #tick()}.
 */
public final class DeliveryLog implements DeliveryListener {

    static final Duration WINDOW = Duration.ofSeconds(30);
    static final Duration SETTLE = Duration.ofSeconds(2);
    static final int PARKINGS_PER_WINDOW = 10;

    private static final Logger LOG = LoggerFactory.getLogger("io.queuebox.delivery");
    private static final Logger HEALTH = LoggerFactory.getLogger("io.queuebox.health");
    // Steps whose Error ended a cycle of an engine thread: a defect or a broken installation, not an outage.
    private static final Set<String> THREAD_STEPS = Set.of("thread", "worker", "renewer", "housekeeping");

    private final Supplier<Health> brokerHealth;
    private final Outage database;
    private final Outage broker;
    private final FailureSummary publishes;
    private final FailureSummary claims;
    private final FailureSummary steps;
    private final LineBudget parkings;
    private final LineBudget leaseLosses;
    private final LineBudget threadErrors;

    public DeliveryLog(Supplier<Health> brokerHealth) {
        this(brokerHealth, Clock.systemUTC());
    }

    DeliveryLog(Supplier<Health> brokerHealth, Clock clock) {
        this.brokerHealth = brokerHealth;
        database = new Outage("database", SETTLE, clock);
        broker = new Outage("broker", SETTLE, clock);
        publishes = new FailureSummary("publish", "publishes", WINDOW, clock);
        claims = new FailureSummary("claim", "claims", WINDOW, clock);
        steps = new FailureSummary("delivery step", "delivery steps", WINDOW, clock);
        parkings = new LineBudget(PARKINGS_PER_WINDOW, WINDOW, clock);
        leaseLosses = new LineBudget(PARKINGS_PER_WINDOW, WINDOW, clock);
        threadErrors = new LineBudget(1, WINDOW, clock);
    }

    // ---------------------------------------------------------------- the engine's events

    @Override
    public void onClaimed(int rows, Duration elapsed) {
        recovered(database.worked());
    }

    @Override
    public void onPublished(List<PublishOutcome> outcomes, Duration elapsed) {
        boolean acked = false;
        boolean failed = false;
        for (PublishOutcome outcome : outcomes) {
            if (outcome.isAcked()) {
                acked = true;
                continue;
            }
            failed = true;
            if (outcome instanceof PublishOutcome.NotAttempted n) {
                publishes.add("not attempted", 1, reason(n.reason()));
            } else if (outcome instanceof PublishOutcome.RetriableFailure r) {
                publishes.add("retriable", 1, reason(r.reason()));
            } else if (outcome instanceof PublishOutcome.PermanentFailure p) {
                publishes.add("permanent", 1, reason(p.reason()));
            }
        }
        if (acked) {
            recovered(broker.worked());
        } else if (failed) {
            brokerDownIfHealthSaysSo();
        }
        if (failed && !broker.isDown()) {
            warn(publishes.atOnce());
        }
    }

    @Override
    public void onRetryScheduled(ClaimedDelivery delivery, Duration delay, String reason) {
        LOG.debug("event {} of {} retries in {} ms after attempt {}: {}", delivery.eventId(), delivery.aggregate(),
                delay.toMillis(), delivery.attempts() + 1, reason);
    }

    @Override
    public void onParked(ClaimedDelivery delivery, String reason) {
        parkingsBeyondBudget(parkings.roll());
        if (parkings.tryAcquire()) {
            LOG.warn("event {} of {} parked after {} attempt(s): {}", delivery.eventId(), delivery.aggregate(),
                    delivery.attempts() + 1, ShortCause.clip(reason));
        }
    }

    @Override
    public void onLeaseLost(LeaseToken lease, int expected, int updated) {
        leaseLossesBeyondBudget(leaseLosses.roll());
        if (leaseLosses.tryAcquire()) {
            LOG.warn("lease {} expired before its outcome was recorded: {} of {} rows were re-claimed by another relay"
                    + " and will be delivered again; consider a longer outbox.leaseMs", lease, expected - updated, expected);
        }
    }

    @Override
    public void onError(String step, Throwable error) {
        // The whole story, for whoever debugs QueueBox itself.
        LOG.debug("delivery step '{}' failed", step, error);
        String cause = ShortCause.of(error);
        if (error instanceof Error || THREAD_STEPS.contains(step)) {
            threadErrorsBeyondBudget(threadErrors.roll());
            if (threadErrors.tryAcquire()) {
                if (step.equals("thread")) {
                    LOG.error("a delivery thread ended unexpectedly: {}; /health/live stays DOWN until the relay is"
                            + " restarted", cause, error);
                } else {
                    LOG.error("delivery step '{}' failed unexpectedly, the engine carries on: {}", step, cause, error);
                }
            }
            return;
        }
        boolean publishing = step.equals("publish");
        Outage dependency = publishing ? broker : database;
        if (publishing) {
            brokerDownIfHealthSaysSo();
        } else if (ShortCause.isConnectionFault(error)) {
            down(database.failed(cause));
        }
        FailureSummary summary = step.equals("claim") ? claims : steps;
        summary.add(step.equals("claim") ? "" : step, 1, cause);
        if (!dependency.isDown()) {
            warn(summary.atOnce());
        }
    }

    // ---------------------------------------------------------------- health and time

    /** The database's health as polled: a failure there is an outage even while nothing is claimed. */
    public void databaseHealth(Health health) {
        observe(database, health);
    }

    /** The broker's health as polled. */
    public void brokerHealth(Health health) {
        observe(broker, health);
    }

    /** Logs the summaries whose window is over. */
    public void tick() {
        warn(publishes.due());
        warn(claims.due());
        warn(steps.due());
        parkingsBeyondBudget(parkings.roll());
        leaseLossesBeyondBudget(leaseLosses.roll());
        threadErrorsBeyondBudget(threadErrors.roll());
    }

    /** Logs everything still counted (at shutdown). */
    public void flush() {
        flushSummaries();
        parkingsBeyondBudget(parkings.flush());
        leaseLossesBeyondBudget(leaseLosses.flush());
        threadErrorsBeyondBudget(threadErrors.flush());
    }

    /** Asked at a failed publish rather than at the next poll, so that an outage's first line is "down", not a count. */
    private void brokerDownIfHealthSaysSo() {
        Health health = brokerHealth.get();
        if (health != null && !health.isUp()) {
            down(broker.failed(ShortCause.clip(health.detail())));
        }
    }

    private void observe(Outage dependency, Health health) {
        if (health.isUp()) {
            recovered(dependency.worked());
        } else {
            down(dependency.failed(ShortCause.clip(health.detail())));
        }
    }

    // ---------------------------------------------------------------- lines

    private void down(Optional<String> line) {
        line.ifPresent(HEALTH::warn);
    }

    /** The count of the outage's failures follows its "recovered" line rather than a window later. */
    private void recovered(Optional<String> line) {
        if (line.isPresent()) {
            HEALTH.info(line.get());
            flushSummaries();
        }
    }

    private void flushSummaries() {
        warn(publishes.flush());
        warn(claims.flush());
        warn(steps.flush());
    }

    private static void warn(Optional<String> line) {
        line.ifPresent(LOG::warn);
    }

    private static void parkingsBeyondBudget(Optional<LineBudget.Suppressed> suppressed) {
        suppressed.ifPresent(s -> LOG.warn("{} more events parked in the last {} (the first {} are logged above);"
                + " list them with 'queuebox outbox parked'", FailureSummary.count(s.count()),
                FailureSummary.seconds(s.over()), PARKINGS_PER_WINDOW));
    }

    private static void leaseLossesBeyondBudget(Optional<LineBudget.Suppressed> suppressed) {
        suppressed.ifPresent(s -> LOG.warn("{} more leases expired before their outcome was recorded in the last {};"
                + " consider a longer outbox.leaseMs", FailureSummary.count(s.count()), FailureSummary.seconds(s.over())));
    }

    private static void threadErrorsBeyondBudget(Optional<LineBudget.Suppressed> suppressed) {
        suppressed.ifPresent(s -> LOG.error("{} more unexpected failures of delivery threads in the last {}",
                FailureSummary.count(s.count()), FailureSummary.seconds(s.over())));
    }

    /** An outcome's reason without what the kind already says, one short line. */
    private static String reason(String reason) {
        return ShortCause.clip(reason.startsWith("not attempted: ") ? reason.substring("not attempted: ".length())
                : reason);
    }
}
