package io.queuebox.bench;

/**
 * How fast a relay can go on this machine at best, when it has to do what the SQL floor does and what the broker
 * alone does, on the same cores: each of the two alone bounds it, and so does their CPU. The floor costs the machine
 * {@code F} ms of CPU per 1,000 rows (PostgreSQL, mostly), the broker alone {@code B} ms (the producer and the
 * broker: with the in-process Kafka, both in the bench JVM); the cores give {@code cores × 1,000} ms per second,
 * less the machine's idle rate. A relay that does both can then deliver at most {@code budget × 1,000 / (F + B)}
 * rows per second, whatever it does itself (its own CPU comes on top). Both figures are above the machine's idle
 * rate, measured in the same run.
 */
record CoRunBound(double rowsPerSecond, double cpuBoundRowsPerSecond) {

    /** The bound for one floor and one broker run of the same rows; null when the machine's CPU is not known. */
    static CoRunBound of(Run floor, Run broker) {
        return of(floor, broker, Runtime.getRuntime().availableProcessors(), Cpu.machineIdleMillisPerSecond());
    }

    /** The bound on {@code cores} cores of which the machine spends {@code idleMillisPerSecond} with nothing running. */
    static CoRunBound of(Run floor, Run broker, int cores, double idleMillisPerSecond) {
        Double f = floor.machineCpuAboveIdleMsPerThousand();
        Double b = broker.machineCpuAboveIdleMsPerThousand();
        if (f == null || b == null || f + b <= 0) {
            return null;
        }
        double budget = cores * 1000.0 - idleMillisPerSecond;
        double cpuBound = budget * 1000.0 / (f + b);
        return new CoRunBound(Math.min(cpuBound, Math.min(floor.rowsPerSecond(), broker.rowsPerSecond())), cpuBound);
    }
}
