package io.queuebox.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ScaleOutMediansTest {

    private static Map<String, Object> run(int processes, long warm, long cold, List<Long> claims, List<Long> empty, int duplicates) {
        Map<String, Object> run = new HashMap<>();
        run.put("processes", processes);
        run.put("rowsPerSecond", warm);
        run.put("coldRowsPerSecond", cold);
        run.put("claimsPerProcess", claims);
        run.put("emptyClaimsPerProcess", empty);
        run.put("duplicates", duplicates);
        run.put("warmupDuplicates", 0);
        return run;
    }

    @Test
    void mediansPerNumberOfProcessesInProcessOrderWithTheCountsSummed() {
        List<Map<String, Object>> medians = ScaleOutMedians.of(List.of(
                run(2, 6_000, 3_000, List.of(40L, 40L), List.of(2L, 3L), 0),
                run(1, 7_000, 3_500, List.of(80L), List.of(0L), 0),
                run(2, 8_000, 3_100, List.of(30L, 50L), List.of(1L, 1L), 1),
                run(2, 7_500, 2_900, List.of(45L, 35L), List.of(0L, 4L), 0)));

        assertThat(medians).extracting(m -> m.get("processes")).containsExactly(1, 2);
        Map<String, Object> two = medians.get(1);
        assertThat(two.get("reps")).isEqualTo(3);
        assertThat(two.get("medianRowsPerSecond")).isEqualTo(7_500L);
        assertThat(two.get("medianColdRowsPerSecond")).isEqualTo(3_000L);
        assertThat(two.get("eachRowsPerSecond")).isEqualTo(List.of(6_000L, 8_000L, 7_500L));
        assertThat(two.get("claims")).isEqualTo(240L);
        assertThat(two.get("emptyClaims")).isEqualTo(11L);
        assertThat(two.get("duplicates")).isEqualTo(1L);
    }
}
