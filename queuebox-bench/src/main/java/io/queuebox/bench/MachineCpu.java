package io.queuebox.bench;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The CPU of the whole machine, whoever spends it (PostgreSQL, RabbitMQ, the bench JVM with its in-process Kafka
 * broker, anything else running), from the first line of /proc/stat. The relay, the SQL floor and the broker alone
 * share the same cores, so what each costs the machine per row bounds how fast a relay doing both can go.
 */
final class MachineCpu {

    private MachineCpu() {
    }

    /** Busy and total jiffies of all cores; null off Linux. */
    static long[] jiffies() {
        try {
            String[] cpu = Files.readAllLines(Path.of("/proc/stat")).get(0).trim().split("\\s+");
            long total = 0;
            // user nice system idle iowait irq softirq steal; guest and guest_nice are already inside user and nice.
            for (int i = 1; i < Math.min(cpu.length, 9); i++) {
                total += Long.parseLong(cpu[i]);
            }
            long idle = Long.parseLong(cpu[4]) + Long.parseLong(cpu[5]); // idle + iowait
            return new long[] {total - idle, total};
        } catch (Exception e) {
            return null;
        }
    }

    /** The share of all cores busy between two {@link #jiffies()} readings, in percent. */
    static Double busyPercent(long[] from, long[] to) {
        if (from == null || to == null || to[1] == from[1]) {
            return null;
        }
        return Latency.round(100.0 * (to[0] - from[0]) / (to[1] - from[1]), 1);
    }

    /**
     * Busy CPU milliseconds of all cores between two readings taken {@code wallNanos} apart: the busy share of the
     * jiffies that passed, times the cores' time (so the clock tick need not be known).
     */
    static Double busyMillis(long[] from, long[] to, long wallNanos) {
        if (from == null || to == null || to[1] == from[1]) {
            return null;
        }
        double share = (double) (to[0] - from[0]) / (to[1] - from[1]);
        return share * Runtime.getRuntime().availableProcessors() * wallNanos / 1e6;
    }
}
