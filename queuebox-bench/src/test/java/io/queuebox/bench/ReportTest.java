package io.queuebox.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ReportTest {

    @Test
    void theSummaryShowsTheFloorThePeersAndTheLatencySideBySide() {
        Map<String, Object> results = new LinkedHashMap<>();
        results.put("date", "2026-11-30T16-10Z");
        results.put("suite", "smoke");
        results.put("elapsedSeconds", 42);
        results.put("machine", Map.of("cores", 2));
        results.put("settings", Map.of("reps", 1));
        results.put("postgresSettings", Map.of("fsync", "on"));
        Map<String, Object> drain = new LinkedHashMap<>();
        drain.put("tier", "headline");
        drain.put("broker", "kafka");
        drain.put("ordering", "per-aggregate");
        drain.put("deleteOnSend", true);
        drain.put("workers", 2);
        drain.put("batch", 500);
        drain.put("rows", 1000);
        drain.put("relayRowsPerSecond", 900L);
        drain.put("relayNoOpRowsPerSecond", 1100L);
        drain.put("sqlFloorMarking", "DELETE");
        drain.put("sqlFloorRowsPerSecond", 1200L);
        drain.put("brokerCeilingRowsPerSecond", 5000L);
        drain.put("ratioToFloor", 0.75);
        drain.put("ratio", 0.75);
        drain.put("relayCpuMsPer1000", 80.5);
        drain.put("coRunBoundRowsPerSecond", 1100L);
        drain.put("ratioToCoRunBound", 0.818);
        drain.put("relayMachineCpuAboveIdleMsPer1000", 120.0);
        drain.put("sqlFloorMachineCpuAboveIdleMsPer1000", 40.0);
        drain.put("brokerCeilingMachineCpuAboveIdleMsPer1000", 30.0);
        results.put("drain", List.of(drain));
        Map<String, Object> peerRow = new LinkedHashMap<>();
        peerRow.put("group", "1 loop / 1 worker / 1 thread");
        peerRow.put("system", "gruelbox, no-op method (1 thread)");
        peerRow.put("medianRowsPerSecond", 700L);
        peerRow.put("medianCpuMsPer1000", 300.0);
        peerRow.put("medianCpuAboveIdleMsPer1000", 250.0);
        peerRow.put("ratioTo", Peers.FLOOR_DELETE);
        peerRow.put("ratio", 0.35);
        peerRow.put("medianMachineCpuAboveIdleMsPer1000", 400.0);
        peerRow.put("reps", List.of(new Run(700, 300.0, 250.0, 400.0, "").toMap()));
        results.put("peers", Map.of("rows", 1000, "aggregates", 1000, "reps", 1, "table", List.of(peerRow)));
        Map<String, Object> latency = new LinkedHashMap<>();
        latency.put("system", "Debezium alone");
        latency.put("endPoint", "change event received");
        latency.put("targetPerSecond", 200);
        latency.put("p50Ms", 7.5);
        latency.put("p99Ms", 21.0);
        latency.put("reps", 1);
        results.put("latencyComparison", List.of(latency));
        Map<String, Object> mode = new LinkedHashMap<>();
        mode.put("mode", "debezium");
        mode.put("system", "Debezium alone");
        mode.put("rep", 1);
        mode.put("steady", List.of(Map.of("targetPerSecond", 200, "p50Ms", 7.5)));
        mode.put("steadyConsumed", List.of(Map.of("targetPerSecond", 200, "p50Ms", 9.5)));
        results.put("latency", List.of(mode));

        Report report = new Report(results);
        String md = report.markdown("performance");

        assertThat(md).contains("`fsync` on")
                .contains("| headline | kafka | per-aggregate | yes | 2 | 500 | 1000 | 900 | 1100 | 1200 (DELETE) | 5000 | 1100 | 75 % | 75 % | 82 % | 80.5 (–) | 120.0 / 40.0 / 30.0 |")
                .contains("| 1 loop / 1 worker / 1 thread | gruelbox, no-op method (1 thread) | 700 | 35 % of SQL floor, DELETE | – | 300.0 (250.0) | 400.0 | 700 |")
                .contains("| Debezium alone | change event received | 200 | 7.5 | 21.0 |")
                .contains("| Debezium alone + RabbitMQ | 1 | 200 |");
        assertThat(report.charts()).containsKeys("drain-headline.svg", "drain-peers.svg", "latency.svg");
    }

    @Test
    void aCellWithEventsNotSeenInTheWindowSaysHowManyCameLateHowManyNeverAndWhatTheRelayLookedLike() {
        Map<String, Object> results = new LinkedHashMap<>();
        results.put("date", "2026-12-01T04-00Z");
        results.put("suite", "standard");
        results.put("elapsedSeconds", 12);
        results.put("machine", Map.of("cores", 2));
        results.put("settings", Map.of("reps", 1));
        Map<String, Object> late = new LinkedHashMap<>();
        late.put("targetPerSecond", 5000);
        late.put("events", 100);
        late.put("notConsumedWithin10s", 100L);
        late.put("seenLate", 100L);
        late.put("neverSeen", 0L);
        late.put("lastSeenAfterEndMs", 31200L);
        late.put("diagnosticAtWindowEnd", "outbox pending=90, leased=10, parked=0");
        Map<String, Object> lost = new LinkedHashMap<>();
        lost.put("targetPerSecond", 1000);
        lost.put("events", 50);
        lost.put("notConsumedWithin10s", 3L);
        lost.put("seenLate", 1L);
        lost.put("neverSeen", 2L);
        lost.put("lastSeenAfterEndMs", null);
        Map<String, Object> fine = new LinkedHashMap<>();
        fine.put("targetPerSecond", 200);
        fine.put("events", 10);
        fine.put("notConsumedWithin10s", 0L);
        fine.put("seenLate", 0L);
        fine.put("neverSeen", 0L);
        Map<String, Object> mode = new LinkedHashMap<>();
        mode.put("mode", "notify");
        mode.put("system", "QueueBox notify");
        mode.put("rep", 2);
        mode.put("steady", List.of(fine, lost, late));
        results.put("latency", List.of(mode));
        results.put("latencyComparison", Peers.latencyMedians(List.of(mode)));
        results.put("failures", List.of("latency: QueueBox notify, rep 2, 1000/s: 2 of 50 events never seen"));

        String md = new Report(results).markdown(null);

        assertThat(md).contains("| not seen in 10 s | seen late / never |")
                .contains("| QueueBox notify | consumed from RabbitMQ | 5000 | null | null | null | null (–) | 1 | 100 | 100 | 100 / 0 |")
                .contains("| QueueBox notify | 2 | 1000 | null | 50 | null | null | null | null | 3 | 1 / 2 | null |")
                .contains("- QueueBox notify, rep 2, 5000/s: 100 of 100 events not seen within 10 s; 100 seen late"
                        + " (the last 31200 ms after the end of production), 0 never seen. At 10 s: outbox pending=90, leased=10, parked=0")
                .contains("- QueueBox notify, rep 2, 1000/s: 3 of 50 events not seen within 10 s; 1 seen late, 2 never seen")
                .doesNotContain("200/s: 0 of")
                .contains("The run failed (the bench exited non-zero):\n\n- latency: QueueBox notify, rep 2, 1000/s: 2 of 50 events never seen\n");
        assertThat(Report.neverSeen(List.of(mode))).containsExactly("QueueBox notify, rep 2, 1000/s: 2 of 50 events never seen");
    }

    @Test
    void theScaleOutTableShowsTheWarmRateBesideTheColdOneAndTheClaimsPerProcess() throws Exception {
        Map<String, Object> results = new LinkedHashMap<>();
        results.put("date", "2026-12-01T08-00Z");
        results.put("suite", "standard");
        results.put("elapsedSeconds", 60);
        results.put("machine", Map.of("cores", 2));
        results.put("settings", Map.of("reps", 3));
        Map<String, Object> two = new LinkedHashMap<>();
        two.put("processes", 2);
        two.put("warmupRows", 10000);
        two.put("coldRowsPerSecond", 5282L);
        two.put("warmupDuplicates", 0);
        two.put("warmupDeliveredPerProcess", List.of(5100L, 4900L));
        two.put("rows", 40000);
        two.put("measuredSeconds", 5.1);
        two.put("rowsPerSecond", 7843L);
        two.put("distinctConsumed", 40000);
        two.put("duplicates", 0);
        two.put("deliveredPerProcess", List.of(20500L, 19500L));
        two.put("claimsPerProcess", List.of(60L, 58L));
        two.put("emptyClaimsPerProcess", List.of(2L, 7L));
        two.put("cpuMillisPerProcess", List.of(3000L, 3100L));
        two.put("machineBusyPercent", 95.0);
        two.put("coldMachineBusyPercent", 99.5);
        // A run recorded before the warm phase existed: only the cold figures, under the old keys.
        Map<String, Object> old = new LinkedHashMap<>();
        old.put("processes", 4);
        old.put("rows", 20000);
        old.put("rowsPerSecond", 3427L);
        old.put("distinctConsumed", 20000);
        old.put("duplicates", 0);
        old.put("deliveredPerProcess", List.of(5000L, 5000L, 5000L, 5000L));
        results.put("scaleOut", List.of(two, old));

        Report report = new Report(results);
        String md = report.markdown("performance");

        assertThat(md).contains("| processes | rows | warm total rows/s | distinct consumed | duplicates | delivered per process"
                        + " | claims per process (empty) | relay CPU ms per process | machine busy % | warm-up rows | cold total rows/s"
                        + " | warm-up duplicates | machine busy % (cold) |")
                .contains("| 2 | 40000 | 7843 | 40000 | 0 | [20500, 19500] | [60 (2), 58 (7)] | [3000, 3100] | 95.0 | 10000 | 5282 | 0 | 99.5 |")
                .contains("| 4 | 20000 | 3427 | 20000 | 0 | [5000, 5000, 5000, 5000] | – | – | – | – | – | – | – |")
                .contains("![Scale-out](performance/scale-out.svg)");
        assertThat(report.charts().get("scale-out.svg")).contains("Scale-out to RabbitMQ, 40000 rows warm, 10000 cold")
                .contains("warm: total rows/s").contains("cold (warm-up from GO): total rows/s");
    }

    @Test
    void theSummaryShowsTheInboxOverheadAsARatioAndMicrosecondsPerMessage() {
        Map<String, Object> results = new LinkedHashMap<>();
        results.put("date", "2026-11-30T19-00Z");
        results.put("suite", "standard");
        results.put("elapsedSeconds", 12);
        results.put("machine", Map.of("cores", 2));
        results.put("settings", Map.of("reps", 3));
        Map<String, Object> inbox = new LinkedHashMap<>();
        inbox.put("messages", 20000);
        inbox.put("threads", 4);
        inbox.put("reps", 3);
        inbox.put("plainMessagesPerSecond", 5000.0);
        inbox.put("inboxMessagesPerSecond", 4000.0);
        inbox.put("plainMicrosPerMessage", 200.0);
        inbox.put("inboxMicrosPerMessage", 250.0);
        inbox.put("ratio", 1.25);
        inbox.put("overheadMicrosPerMessage", 50.0);
        results.put("inbox", inbox);

        String md = new Report(results).markdown(null);

        assertThat(md).contains("#### Inbox overhead")
                .contains("| plain | 5000.0 | 200.0 |")
                .contains("| inbox | 4000.0 | 250.0 |")
                .contains("inbox ÷ plain: 1.25; overhead 50.0 µs per message.");
    }
}
