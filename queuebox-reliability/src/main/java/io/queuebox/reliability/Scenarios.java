package io.queuebox.reliability;

import static io.queuebox.reliability.Trial.workload;

import io.queuebox.ports.OutboxEvent;
import io.queuebox.postgres.PostgresOutbox;
import io.queuebox.postgres.PostgresOutboxSettings;
import io.queuebox.testkit.faults.TcpProxy;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;

/** The scenarios of docs/reliability.md, each judged by {@link Verdict} plus its own checks. */
final class Scenarios {

    interface Scenario {
        Trial.Outcome run(Bed bed, Form form) throws Exception;
    }

    private static final Duration DRAIN = Duration.ofMinutes(3);

    /** Scenario names in the order of the report. */
    static Map<String, Scenario> all() {
        Map<String, Scenario> all = new LinkedHashMap<>();
        all.put("kill-9", Scenarios::kills);
        all.put("rabbitmq-outage", Scenarios::rabbitOutage);
        all.put("kafka-outage", Scenarios::kafkaOutage);
        all.put("postgres-restart", Scenarios::postgresRestart);
        all.put("four-relays", Scenarios::fourRelays);
        all.put("database-network-cut", Scenarios::databaseCut);
        all.put("broker-network-cut", Scenarios::brokerCut);
        all.put("poison-rabbitmq", PoisonScenarios::rabbit);
        all.put("poison-kafka", PoisonScenarios::kafka);
        all.put("lease-expiry", Scenarios::leaseExpiry);
        all.put("kill-9-held-locks", (bed, form) -> killDuringPublish(bed, form, true));
        all.put("kill-9-leased", (bed, form) -> killDuringPublish(bed, form, false));
        all.put("kill-9-pipelined", (bed, form) -> kills(bed, form, "kill-9-pipelined", PIPELINED));
        all.put("four-relays-pipelined", (bed, form) -> fourRelays(bed, form, "four-relays-pipelined", PIPELINED));
        all.put("rabbitmq-outage-pipelined", (bed, form) -> rabbitOutage(bed, form, "rabbitmq-outage-pipelined", PIPELINED));
        all.put("kafka-outage-pipelined", (bed, form) -> kafkaOutage(bed, form, "kafka-outage-pipelined", PIPELINED));
        all.put("postgres-restart-pipelined", (bed, form) -> postgresRestart(bed, form, "postgres-restart-pipelined", PIPELINED));
        all.put("database-network-cut-pipelined", (bed, form) -> databaseCut(bed, form, "database-network-cut-pipelined", PIPELINED));
        all.put("broker-network-cut-pipelined", (bed, form) -> brokerCut(bed, form, "broker-network-cut-pipelined", PIPELINED));
        all.put("capture-faults", CaptureScenario::run);
        return all;
    }

    /**
     * Pipelined workers ({@code outbox.pipelineDepth} 2): a worker claims its next batch while the last one publishes,
     * and marks a cleanly acked batch sent on its record thread while the next one publishes.
     */
    private static final Map<String, String> PIPELINED = Map.of("outbox.pipelineDepth", "2");

    /** 1: SIGKILL at random moments, restarted each time. */
    static Trial.Outcome kills(Bed bed, Form form) throws Exception {
        return kills(bed, form, "kill-9", Map.of());
    }

    /** 1 with extra relay configuration (the pipelined variant kills relays with two batches out per worker). */
    static Trial.Outcome kills(Bed bed, Form form, String name, Map<String, String> extra) throws Exception {
        try (Trial trial = new Trial(bed, name, "rabbitmq")) {
            Map<String, String> config = new java.util.HashMap<>(extra);
            config.put("outbox.leaseMs", "5000");
            trial.produce(workload(form.transactionsPerSecond(), 1));
            if (form.killEvents() > 0) {
                trial.producer().stopAfter(form.killEvents());
            }
            Random random = new Random(1);
            RelayProcess relay = trial.startRelay(config);
            long upMillis = form.relayRunsAtMost().toMillis();
            for (int kill = 0; kill < form.kills(); kill++) {
                Thread.sleep(1000 + random.nextInt((int) upMillis - 1000));
                relay.kill();
                relay = trial.startRelay(config);
            }
            while (!trial.producer().finished() && form.killEvents() > 0) {
                Thread.sleep(500);
            }
            trial.notes.put("kills", form.kills());
            trial.faultEnded();
            Thread.sleep(form.steady().toMillis());
            return trial.finish(DRAIN);
        }
    }

    /** 2a: RabbitMQ stopped (stop_app) mid-run, then started again. */
    static Trial.Outcome rabbitOutage(Bed bed, Form form) throws Exception {
        return rabbitOutage(bed, form, "rabbitmq-outage", Map.of());
    }

    /** 2a with extra relay configuration. */
    static Trial.Outcome rabbitOutage(Bed bed, Form form, String name, Map<String, String> extra) throws Exception {
        return brokerOutage(new Trial(bed, name, "rabbitmq"), form, 2, extra, () -> Bed.rabbitmq("stop_app"),
                () -> {
                    Bed.rabbitmq("start_app");
                    Bed.rabbitmq("await_startup");
                });
    }

    /** 2b: the in-process Kafka broker stopped mid-run, then restarted on its data and port. */
    static Trial.Outcome kafkaOutage(Bed bed, Form form) throws Exception {
        return kafkaOutage(bed, form, "kafka-outage", Map.of());
    }

    /** 2b with extra relay configuration. */
    static Trial.Outcome kafkaOutage(Bed bed, Form form, String name, Map<String, String> extra) throws Exception {
        return brokerOutage(new Trial(bed, name, "kafka"), form, 3, extra, () -> bed.kafka().stopBroker(),
                () -> bed.kafka().restartBroker());
    }

    interface Action {
        void run() throws Exception;
    }

    private static Trial.Outcome brokerOutage(Trial opened, Form form, long seed, Map<String, String> extra, Action stop,
                                              Action start) throws Exception {
        try (Trial trial = opened) {
            RelayProcess relay = trial.startRelay(extra);
            trial.produce(workload(form.transactionsPerSecond(), seed));
            Thread.sleep(form.steady().toMillis());
            try {
                stop.run();
                Thread.sleep(form.brokerOutage().toMillis());
            } finally {
                start.run();
            }
            trial.faultEnded();
            trial.notes.put("outageSeconds", form.brokerOutage().toSeconds());
            Thread.sleep(form.steady().toMillis());
            requireAlive(trial, relay);
            return trial.finish(DRAIN);
        }
    }

    /** 3: PostgreSQL restarted mid-run; the relay must recover without being restarted. */
    static Trial.Outcome postgresRestart(Bed bed, Form form) throws Exception {
        return postgresRestart(bed, form, "postgres-restart", Map.of());
    }

    /** 3 with extra relay configuration. */
    static Trial.Outcome postgresRestart(Bed bed, Form form, String name, Map<String, String> extra) throws Exception {
        try (Trial trial = new Trial(bed, name, "rabbitmq")) {
            RelayProcess relay = trial.startRelay(extra);
            trial.produce(workload(form.transactionsPerSecond(), 4));
            Thread.sleep(form.steady().toMillis());
            try {
                Bed.postgres("restart");
            } finally {
                awaitPostgres();
            }
            trial.faultEnded();
            Thread.sleep(form.steady().toMillis());
            requireAlive(trial, relay);
            return trial.finish(DRAIN);
        }
    }

    /** 4: four relays on one table, no faults: no event may be sent twice. */
    static Trial.Outcome fourRelays(Bed bed, Form form) throws Exception {
        return fourRelays(bed, form, "four-relays", Map.of());
    }

    /** 4 with extra relay configuration. */
    static Trial.Outcome fourRelays(Bed bed, Form form, String name, Map<String, String> extra) throws Exception {
        try (Trial trial = new Trial(bed, name, "kafka")) {
            for (int i = 0; i < 4; i++) {
                trial.startRelay(extra);
            }
            trial.produce(workload(form.transactionsPerSecond() * 2, 5));
            Thread.sleep(form.steady().toMillis() * 3);
            Trial.Outcome outcome = trial.finish(DRAIN);
            if (outcome.verdict().duplicates() != 0) {
                return withFailure(outcome, "four relays without faults sent " + outcome.verdict().duplicates()
                        + " duplicates");
            }
            return outcome;
        }
    }

    /** 5a: the relay's database connections stop forwarding for a while; no socket is closed. */
    static Trial.Outcome databaseCut(Bed bed, Form form) throws Exception {
        return databaseCut(bed, form, "database-network-cut", Map.of());
    }

    /** 5a with extra relay configuration. */
    static Trial.Outcome databaseCut(Bed bed, Form form, String name, Map<String, String> extra) throws Exception {
        try (Trial trial = new Trial(bed, name, "rabbitmq")) {
            TcpProxy proxy = new TcpProxy(Bed.PG_HOST, Bed.PG_PORT);
            trial.closeLater(proxy);
            RelayProcess relay = trial.startRelay(with(extra, "database.url", bed.jdbcUrl(trial.database, proxy.port())));
            return cut(trial, relay, proxy, form, 6);
        }
    }

    /** 5b: the relay's broker connection stops forwarding for a while; no socket is closed. */
    static Trial.Outcome brokerCut(Bed bed, Form form) throws Exception {
        return brokerCut(bed, form, "broker-network-cut", Map.of());
    }

    /** 5b with extra relay configuration. */
    static Trial.Outcome brokerCut(Bed bed, Form form, String name, Map<String, String> extra) throws Exception {
        try (Trial trial = new Trial(bed, name, "rabbitmq")) {
            TcpProxy proxy = new TcpProxy(Bed.RABBIT_HOST, Bed.RABBIT_PORT);
            trial.closeLater(proxy);
            RelayProcess relay = trial.startRelay(with(extra, "broker.rabbitmq.uri", bed.rabbitUri(proxy.port())));
            return cut(trial, relay, proxy, form, 7);
        }
    }

    private static Map<String, String> with(Map<String, String> extra, String key, String value) {
        Map<String, String> config = new HashMap<>(extra);
        config.put(key, value);
        return config;
    }

    private static Trial.Outcome cut(Trial trial, RelayProcess relay, TcpProxy proxy, Form form, long seed)
            throws Exception {
        trial.produce(workload(form.transactionsPerSecond(), seed));
        Thread.sleep(form.steady().toMillis());
        proxy.cut();
        long cutStart = System.nanoTime();
        List<String> readiness = new ArrayList<>();
        try {
            while (System.nanoTime() - cutStart < form.networkCut().toNanos()) {
                String body = relay.readiness();
                readiness.add(body.startsWith("unreachable") ? "NO-ANSWER"
                        : body.startsWith("{\"status\":\"DOWN\"") ? "DOWN" : "UP");
                Thread.sleep(1000);
            }
        } finally {
            proxy.restore();
        }
        trial.faultEnded();
        trial.notes.put("cutSeconds", form.networkCut().toSeconds());
        trial.notes.put("readinessDuringCut", String.join(",", collapse(readiness)));
        if (!readiness.contains("DOWN")) {
            trial.failures.add("the relay's readiness never said DOWN during the " + form.networkCut().toSeconds()
                    + " s cut: " + collapse(readiness));
        }
        Thread.sleep(form.steady().toMillis());
        requireAlive(trial, relay);
        return trial.finish(DRAIN);
    }

    /** How long lease-expiry's proxy holds each chunk to and from the broker: longer than the cut and B's start. */
    static final Duration BROKER_HOLD = Duration.ofSeconds(8);

    /**
     * 7: relay A publishes alone through a proxy that holds every chunk longer than the lease, and loses its
     * database while it waits for the confirms of a batch it claimed after the hold began, so it cannot renew;
     * relay B claims the expired rows and delivers them. A's late outcome must be fenced (counted by
     * {@code queuebox_lease_lost_rows_total}), and the copies it still sent are the duplicates this costs. Both relays
     * write leases ({@code outbox.holdRowLocks: false}): this is the expiry of a lease written on the rows; claims that
     * hold row locks are freed by PostgreSQL ending the claim's transaction (kill-9-held-locks, and the store's tests
     * of a relay that stops answering or reading).
     */
    static Trial.Outcome leaseExpiry(Bed bed, Form form) throws Exception {
        try (Trial trial = new Trial(bed, "lease-expiry", "rabbitmq")) {
            TcpProxy brokerProxy = new TcpProxy(Bed.RABBIT_HOST, Bed.RABBIT_PORT);
            TcpProxy databaseProxy = new TcpProxy(Bed.PG_HOST, Bed.PG_PORT);
            trial.closeLater(brokerProxy);
            trial.closeLater(databaseProxy);
            RelayProcess slow = trial.startRelay(Map.of(
                    "database.url", bed.jdbcUrl(trial.database, databaseProxy.port()),
                    "broker.rabbitmq.uri", bed.rabbitUri(brokerProxy.port()),
                    "broker.rabbitmq.confirm.timeout.ms", "30000",
                    "outbox.leaseMs", "3000",
                    "outbox.holdRowLocks", "false"));
            trial.produce(workload(form.transactionsPerSecond(), 8));
            Thread.sleep(form.steady().toMillis());
            brokerProxy.delay(BROKER_HOLD);
            // A batch A claimed before the delay is confirmed within BROKER_HOLD, while A's database is cut below,
            // and an outcome that fails there fences nothing (CI of 14aab77). The cut waits for a claim made since:
            // its publish and its confirms are each held, so its outcome comes after the restore, against the lease
            // B took.
            String claimedBefore = trial.leaseTokens("lease_owner = '" + slow.name() + "'");
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (trial.count("status = 'pending' AND lease_owner = '" + slow.name() + "' AND lease_until > now()"
                    + " AND lease_token <> ALL ('" + claimedBefore + "'::uuid[])") == 0) {
                if (System.nanoTime() > deadline) {
                    trial.failures.add("the slow relay claimed nothing within 30 s of the broker's delay");
                    break;
                }
                Thread.sleep(50);
            }
            databaseProxy.cut();
            RelayProcess other = trial.startRelay(Map.of("outbox.leaseMs", "3000", "outbox.holdRowLocks", "false"));
            Thread.sleep(8000); // A's lease (3 s) runs out unrenewed; B claims and delivers those rows
            databaseProxy.restore();
            Thread.sleep(12_000); // A's confirms come 2 x BROKER_HOLD after its claim; its outcome meets a lost lease
            brokerProxy.delay(Duration.ZERO);
            trial.faultEnded();
            Thread.sleep(form.steady().toMillis());
            requireAlive(trial, slow);
            requireAlive(trial, other);
            double fenced = slow.metric("queuebox_lease_lost_rows_total");
            trial.notes.put("fencedOutcomesOfTheSlowRelay", fenced);
            Trial.Outcome outcome = trial.finish(DRAIN);
            if (fenced <= 0) {
                return withFailure(outcome, "the slow relay's lease never expired under it: the scenario did not"
                        + " exercise fencing (queuebox_lease_lost_rows_total " + fenced + ")");
            }
            return outcome;
        }
    }

    /** How long a killed relay's rows may wait for the others: the target of claims that hold row locks. */
    static final Duration KILLED_ROWS_FREED_WITHIN = Duration.ofSeconds(5);

    /**
     * 8: two relays with a 30 s lease (six times the default, so that only the kill can free rows in time); relay A's broker traffic stops mid-run, so its publishes hang
     * while it holds their rows (and, per aggregate, the rows behind them); then A is killed with SIGKILL. With
     * claims that hold row locks ({@code outbox.holdRowLocks}) PostgreSQL ends A's transactions when its
     * connections close, and relay B must deliver every row that was pending at the kill within 5 s. With
     * leased claims (the comparison) those rows wait for the lease.
     */
    static Trial.Outcome killDuringPublish(Bed bed, Form form, boolean holdRowLocks) throws Exception {
        try (Trial trial = new Trial(bed, holdRowLocks ? "kill-9-held-locks" : "kill-9-leased", "rabbitmq")) {
            TcpProxy brokerProxy = new TcpProxy(Bed.RABBIT_HOST, Bed.RABBIT_PORT);
            trial.closeLater(brokerProxy);
            Map<String, String> holding = Map.of("outbox.holdRowLocks", Boolean.toString(holdRowLocks),
                    "outbox.leaseMs", "30000");
            Map<String, String> stuck = new HashMap<>(holding);
            stuck.put("broker.rabbitmq.uri", bed.rabbitUri(brokerProxy.port()));
            stuck.put("broker.rabbitmq.confirm.timeout.ms", "60000");
            RelayProcess killed = trial.startRelay(stuck);
            RelayProcess other = trial.startRelay(holding);
            trial.produce(workload(form.transactionsPerSecond(), 9));
            Thread.sleep(form.steady().toMillis());
            brokerProxy.cut();
            // B delivers every free row within a poll; rows pending for 2 s are held by A or queued behind them.
            Duration stalledFor = Duration.ofSeconds(2);
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (trial.countPendingCommittedFor(stalledFor) == 0) {
                if (System.nanoTime() > deadline) {
                    trial.failures.add("relay A never held rows for 2 s within 30 s of its broker cut");
                    break;
                }
                Thread.sleep(100);
            }
            Set<UUID> pendingAtKill = trial.eventIds("status = 'pending'");
            trial.notes.put("rowsStalledAtKill", trial.countPendingCommittedFor(stalledFor));
            trial.notes.put("rowsPendingAtKill", pendingAtKill.size());
            long killedAt = System.nanoTime();
            killed.kill();
            while (!trial.receipts.containsAll(pendingAtKill)
                    && System.nanoTime() - killedAt < Duration.ofSeconds(60).toNanos()) {
                Thread.sleep(50);
            }
            double seconds = (System.nanoTime() - killedAt) / 1e9;
            trial.notes.put("secondsUntilPendingAtKillDelivered", Math.round(seconds * 10) / 10.0);
            if (holdRowLocks && seconds > KILLED_ROWS_FREED_WITHIN.toSeconds()) {
                trial.failures.add(String.format(Locale.ROOT, "the rows pending when relay A was killed took"
                        + " %.1f s to arrive (more than %d s; the lease is 30 s)", seconds,
                        KILLED_ROWS_FREED_WITHIN.toSeconds()));
            }
            trial.faultEnded();
            Thread.sleep(form.steady().toMillis());
            requireAlive(trial, other);
            return trial.finish(DRAIN);
        }
    }

    static void requireAlive(Trial trial, RelayProcess relay) throws Exception {
        if (!relay.alive()) {
            trial.failures.add(relay.name() + " exited during the fault instead of recovering:\n" + relay.tail());
        }
    }

    static Trial.Outcome withFailure(Trial.Outcome outcome, String failure) {
        List<String> failures = new ArrayList<>(outcome.failures());
        failures.add(failure);
        return new Trial.Outcome(outcome.verdict(), outcome.notes(), failures);
    }

    static void awaitPostgres() throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (true) {
            try (Connection ignored = DriverManager.getConnection(
                    "jdbc:postgresql://" + Bed.PG_HOST + ":" + Bed.PG_PORT + "/postgres?user=postgres")) {
                return;
            } catch (java.sql.SQLException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(200);
            }
        }
    }

    /** "UP,UP,DOWN,DOWN" as "UP x2, DOWN x2". */
    static List<String> collapse(List<String> states) {
        List<String> out = new ArrayList<>();
        String last = null;
        int n = 0;
        for (String state : states) {
            if (state.equals(last)) {
                n++;
            } else {
                if (last != null) {
                    out.add(last + " x" + n);
                }
                last = state;
                n = 1;
            }
        }
        if (last != null) {
            out.add(last + " x" + n);
        }
        return out;
    }

    /** Writes events in one committed transaction through the library's writer (for poison events). */
    static void write(Trial trial, List<OutboxEvent> events) throws Exception {
        try (Connection connection = DriverManager.getConnection(trial.jdbcUrl())) {
            connection.setAutoCommit(false);
            PostgresOutbox.jdbcWriter(PostgresOutboxSettings.defaults()).enqueueAll(connection, events);
            connection.commit();
        }
    }

    static OutboxEvent event(String aggregate, String destination, int payloadBytes) {
        byte[] payload = ("{\"pad\":\"" + "x".repeat(Math.max(0, payloadBytes - 10)) + "\"}")
                .getBytes(StandardCharsets.UTF_8);
        return OutboxEvent.of(Producer.AGGREGATE_TYPE, aggregate, "Changed", payload).withDestination(destination);
    }

    private Scenarios() {
    }
}
