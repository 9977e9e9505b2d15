package io.queuebox.reliability;

import static io.queuebox.reliability.Trial.workload;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * 8: capture on ({@code postgres-logical}). The connector's replication connection is killed with
 * {@code pg_terminate_backend}, then the slot is dropped while the relay runs. Delivery must never stop
 * (the poll keeps going), capture must report each fault by its reason, and nothing may be lost.
 */
final class CaptureScenario {

    private static final Pattern CAPTURE = Pattern.compile("\"outbox-capture\"\\s*:\\s*\\{[^}]*\\}");

    static Trial.Outcome run(Bed bed, Form form) throws Exception {
        try (Trial trial = new Trial(bed, "capture-faults", "rabbitmq")) {
            String slot = "qb_rel_capture_slot";
            Path state = Files.createTempDirectory(bed.workDir, "capture-state");
            // The operator's part of the setup (docs/how-to/capture-changes.md); the connector creates the slot.
            try (Connection connection = DriverManager.getConnection(trial.jdbcUrl());
                 Statement statement = connection.createStatement()) {
                statement.execute("CREATE PUBLICATION qb_rel_capture_pub FOR TABLE public.queuebox_outbox"
                        + (connection.getMetaData().getDatabaseMajorVersion() >= 15 ? " (event_id)" : "")
                        + " WITH (publish = 'insert')");
            }
            RelayProcess relay = trial.startRelay(Map.of(
                    "outbox.capture.enabled", "true",
                    "outbox.capture.mode", "postgres-logical",
                    "outbox.capture.slot", slot,
                    "outbox.capture.publication", "qb_rel_capture_pub",
                    "outbox.capture.stateDirectory", state.toString(),
                    "outbox.pollIntervalMs", "1000"));
            trial.produce(workload(form.transactionsPerSecond(), 9));
            Set<String> seen = new LinkedHashSet<>();
            watch(relay, seen, form.steady());
            int terminated = terminate(trial, slot);
            trial.notes.put("walsendersTerminated", terminated);
            watch(relay, seen, Duration.ofSeconds(10));
            boolean dropped = dropWhileRunning(trial, slot);
            trial.notes.put("slotDropped", dropped);
            watch(relay, seen, Duration.ofSeconds(15));
            trial.faultEnded();
            watch(relay, seen, form.steady());
            Scenarios.requireAlive(trial, relay);
            trial.notes.put("captureStatesSeen", String.join(" | ", seen));
            Trial.Outcome outcome = trial.finish(Duration.ofMinutes(2));
            long gap = maxGapMillis(trial);
            trial.notes.put("longestDeliveryGapMs", gap);
            if (!dropped) {
                trial.failures.add("the slot could not be dropped while the relay ran");
            }
            if (seen.stream().noneMatch(s -> s.toLowerCase().contains("slot"))) {
                trial.failures.add("capture never reported the dropped slot; states seen: " + seen);
            }
            if (gap > 5000) {
                trial.failures.add("delivery stopped for " + gap + " ms during the capture faults");
            }
            return new Trial.Outcome(outcome.verdict(), new java.util.TreeMap<>(trial.notes), List.copyOf(trial.failures));
        }
    }

    /** Polls the relay's readiness and keeps each distinct capture component it showed. */
    private static void watch(RelayProcess relay, Set<String> seen, Duration duration) throws InterruptedException {
        long end = System.nanoTime() + duration.toNanos();
        while (System.nanoTime() < end) {
            Matcher matcher = CAPTURE.matcher(relay.readiness());
            if (matcher.find()) {
                seen.add(matcher.group().replaceAll("\"since\"\\s*:\\s*\"[^\"]*\",?", ""));
            }
            Thread.sleep(250);
        }
    }

    private static int terminate(Trial trial, String slot) throws SQLException {
        try (Connection connection = DriverManager.getConnection(trial.jdbcUrl());
             Statement statement = connection.createStatement()) {
            var result = statement.executeQuery("SELECT count(pg_terminate_backend(active_pid))"
                    + " FROM pg_replication_slots WHERE slot_name = '" + slot + "' AND active");
            result.next();
            return result.getInt(1);
        }
    }

    /** The connector reconnects quickly, so terminate and drop in a loop until the drop wins. */
    private static boolean dropWhileRunning(Trial trial, String slot) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        try (Connection connection = DriverManager.getConnection(trial.jdbcUrl());
             Statement statement = connection.createStatement()) {
            while (System.nanoTime() < deadline) {
                statement.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots"
                        + " WHERE slot_name = '" + slot + "' AND active");
                try {
                    statement.execute("SELECT pg_drop_replication_slot('" + slot + "')");
                    return true;
                } catch (SQLException e) {
                    Thread.sleep(20); // still active (reconnected) or not yet released
                }
            }
        }
        return false;
    }

    /** The longest pause between two first deliveries while events were being written. */
    private static long maxGapMillis(Trial trial) {
        List<Receipts.Receipt> receipts = trial.receipts.snapshot();
        long max = 0;
        for (int i = 1; i < receipts.size(); i++) {
            max = Math.max(max, receipts.get(i).receivedAt() - receipts.get(i - 1).receivedAt());
        }
        return max / 1_000_000;
    }

    private CaptureScenario() {
    }
}
