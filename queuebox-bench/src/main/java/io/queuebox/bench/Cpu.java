package io.queuebox.bench;

import java.lang.management.ManagementFactory;

/**
 * CPU time of the bench JVM across a measured window ({@code com.sun.management.OperatingSystemMXBean}). It is
 * the whole process: the relay or peer under test, and whatever else the bench runs in the same JVM during the
 * window (producers, the RabbitMQ consumer, the in-process Kafka broker when Kafka is the broker). PostgreSQL's
 * own CPU is not in it.
 */
final class Cpu {

    private final long startNanos;

    private Cpu(long startNanos) {
        this.startNanos = startNanos;
    }

    static Cpu start() {
        return new Cpu(processCpuNanos());
    }

    /** Process CPU nanoseconds since {@link #start()}; negative when the platform does not report it. */
    long elapsedNanos() {
        long now = processCpuNanos();
        return now < 0 || startNanos < 0 ? -1 : now - startNanos;
    }

    /** CPU ms per 1,000 events since {@link #start()}. */
    Double msPerThousand(long events) {
        return Stats.cpuMsPerThousand(elapsedNanos(), events);
    }

    private static long processCpuNanos() {
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
            return os.getProcessCpuTime();
        }
        return -1;
    }
}
