package io.queuebox.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PeersTest {

    private static Map<String, Object> steady(int rate, double p50, double p99, int events, int lost) {
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("targetPerSecond", rate);
        row.put("events", events);
        row.put("notConsumedWithin10s", lost);
        row.put("p50Ms", p50);
        row.put("p99Ms", p99);
        row.put("p999Ms", p99 + 1);
        row.put("cpuMsPer1000", p50 * 10);
        return row;
    }

    private static Map<String, Object> mode(String mode, String system, int rep, List<Map<String, Object>> steady,
                                            List<Map<String, Object>> consumed) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("mode", mode);
        m.put("system", system);
        m.put("rep", rep);
        m.put("steady", steady);
        if (consumed != null) {
            m.put("steadyConsumed", consumed);
        }
        return m;
    }

    @Test
    void seenLateAndNeverSeenAreSummedAcrossRepetitionsLikeNotSeen() {
        Map<String, Object> one = steady(5000, 40, 90, 1000, 1000);
        one.put("seenLate", 1000L);
        one.put("neverSeen", 0L);
        Map<String, Object> two = steady(5000, 40, 90, 1000, 5);
        two.put("seenLate", 3L);
        two.put("neverSeen", 2L);

        List<Map<String, Object>> table = Peers.latencyMedians(List.of(
                mode("notify", "QueueBox notify", 1, List.of(one), null),
                mode("notify", "QueueBox notify", 2, List.of(two), null)));

        assertThat(table.get(0)).containsEntry("notSeen", 1005L).containsEntry("seenLate", 1003L).containsEntry("neverSeen", 2L);
    }

    @Test
    void theListenNotifyFloorEndsWhereTheNotificationIsReturned() {
        List<Map<String, Object>> table = Peers.latencyMedians(List.of(
                mode("notify-alone", "LISTEN/NOTIFY alone (pgjdbc)", 1, List.of(steady(1000, 6, 50, 8000, 0)), null),
                mode("notify-alone", "LISTEN/NOTIFY alone (pgjdbc)", 2, List.of(steady(1000, 8, 70, 8000, 0)), null)));

        assertThat(table).singleElement().satisfies(row -> assertThat(row)
                .containsEntry("endPoint", "notification received").containsEntry("p50Ms", 7.0).containsEntry("p99Ms", 60.0));
    }

    @Test
    void latencyMediansAreTakenPerSystemAndRateAcrossInterleavedRepetitions() {
        List<Map<String, Object>> modes = List.of(
                mode("polling", "QueueBox polling 100 ms", 1, List.of(steady(200, 50, 100, 1600, 0), steady(1000, 60, 110, 8000, 0)), null),
                mode("debezium", "Debezium alone", 1, List.of(steady(200, 5, 9, 1600, 0)), List.of(steady(200, 8, 15, 1600, 0))),
                mode("polling", "QueueBox polling 100 ms", 2, List.of(steady(200, 40, 90, 1600, 0), steady(1000, 70, 130, 8000, 1)), null),
                mode("debezium", "Debezium alone", 2, List.of(steady(200, 7, 11, 1600, 0)), List.of(steady(200, 10, 19, 1600, 0))),
                mode("polling", "QueueBox polling 100 ms", 3, List.of(steady(200, 60, 95, 1600, 0), steady(1000, 65, 120, 8000, 0)), null),
                mode("debezium", "Debezium alone", 3, List.of(steady(200, 6, 30, 1600, 0)), List.of(steady(200, 9, 17, 1600, 0))));

        List<Map<String, Object>> table = Peers.latencyMedians(modes);

        assertThat(table).extracting(r -> r.get("system") + " " + r.get("targetPerSecond") + " " + r.get("endPoint")).containsExactly(
                "QueueBox polling 100 ms 200 consumed from RabbitMQ",
                "QueueBox polling 100 ms 1000 consumed from RabbitMQ",
                "Debezium alone 200 change event received",
                "Debezium alone + RabbitMQ (confirm, consume) 200 consumed from RabbitMQ");
        assertThat(table.get(0)).containsEntry("p50Ms", 50.0).containsEntry("p99Ms", 95.0).containsEntry("reps", 3)
                .containsEntry("events", 4800L).containsEntry("cpuMsPer1000", 500.0);
        assertThat(table.get(1)).containsEntry("p50Ms", 65.0).containsEntry("notSeen", 1L);
        // Rows from before the extended wait have no seenLate or neverSeen: null, not 0.
        assertThat(table.get(1)).containsEntry("seenLate", null).containsEntry("neverSeen", null);
        assertThat(table.get(2)).containsEntry("p50Ms", 6.0).containsEntry("p99Ms", 11.0);
        assertThat(table.get(3)).containsEntry("p50Ms", 9.0).containsEntry("p99Ms", 17.0);
    }
}
