package io.queuebox.bench;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One measured drain: rows per second from start to the last row marked, the JVM's CPU per 1,000 rows, and the whole
 * machine's (above its idle rate).
 */
record Run(double rowsPerSecond, Double cpuMsPerThousand, Double cpuAboveIdleMsPerThousand,
           Double machineCpuAboveIdleMsPerThousand, String detail) {

    static Run of(int rows, double seconds, Cpu cpu, String detail) {
        return new Run(rows / seconds, cpu.msPerThousand(rows), cpu.msPerThousandAboveIdle(rows),
                cpu.machineMsPerThousandAboveIdle(rows), detail);
    }

    Run withDetail(String detail) {
        return new Run(rowsPerSecond, cpuMsPerThousand, cpuAboveIdleMsPerThousand, machineCpuAboveIdleMsPerThousand, detail);
    }

    Map<String, Object> toMap() {
        Map<String, Object> map = new LinkedHashMap<>();
        map.put("rowsPerSecond", Math.round(rowsPerSecond));
        map.put("cpuMsPer1000", cpuMsPerThousand);
        map.put("cpuAboveIdleMsPer1000", cpuAboveIdleMsPerThousand);
        map.put("machineCpuAboveIdleMsPer1000", machineCpuAboveIdleMsPerThousand);
        if (detail != null && !detail.isEmpty()) {
            map.put("detail", detail);
        }
        return map;
    }
}
