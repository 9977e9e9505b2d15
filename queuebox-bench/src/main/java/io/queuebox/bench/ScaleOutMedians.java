package io.queuebox.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** The scale-out's repetitions summed up per number of processes: medians of the rates, totals of the counts. */
final class ScaleOutMedians {

    private ScaleOutMedians() {
    }

    static List<Map<String, Object>> of(List<Map<String, Object>> runs) {
        Map<Integer, List<Map<String, Object>>> byProcesses = new TreeMap<>();
        for (Map<String, Object> run : runs) {
            byProcesses.computeIfAbsent(((Number) run.get("processes")).intValue(), k -> new ArrayList<>()).add(run);
        }
        List<Map<String, Object>> medians = new ArrayList<>();
        byProcesses.forEach((processes, same) -> {
            List<Number> warm = new ArrayList<>();
            List<Number> cold = new ArrayList<>();
            long duplicates = 0;
            long claims = 0;
            long empty = 0;
            for (Map<String, Object> run : same) {
                warm.add((Number) run.get("rowsPerSecond"));
                cold.add((Number) run.get("coldRowsPerSecond"));
                duplicates += longOf(run.get("duplicates")) + longOf(run.get("warmupDuplicates"));
                claims += sum(run.get("claimsPerProcess"));
                empty += sum(run.get("emptyClaimsPerProcess"));
            }
            Map<String, Object> median = new LinkedHashMap<>();
            median.put("processes", processes);
            median.put("reps", same.size());
            median.put("medianRowsPerSecond", round(Stats.median(warm)));
            median.put("eachRowsPerSecond", warm);
            median.put("medianColdRowsPerSecond", round(Stats.median(cold)));
            median.put("eachColdRowsPerSecond", cold);
            median.put("claims", claims);
            median.put("emptyClaims", empty);
            median.put("duplicates", duplicates);
            medians.add(median);
        });
        return medians;
    }

    private static Long round(Double value) {
        return value == null ? null : Math.round(value);
    }

    private static long longOf(Object value) {
        return value instanceof Number n ? n.longValue() : 0;
    }

    private static long sum(Object values) {
        long total = 0;
        if (values instanceof List<?> list) {
            for (Object value : list) {
                total += longOf(value);
            }
        }
        return total;
    }
}
