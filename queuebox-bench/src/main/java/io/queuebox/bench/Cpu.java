package io.queuebox.bench;

import java.lang.management.ManagementFactory;
import java.time.Duration;

/**
 * CPU time of the bench JVM across a measured window ({@code com.sun.management.OperatingSystemMXBean}). It is
 * the whole process: the relay or peer under test, and whatever else the bench runs in the same JVM during the
 * window (producers, the RabbitMQ consumer, the in-process Kafka broker when there is one, JIT and GC).
 * PostgreSQL's own CPU is not in it. Because the in-process broker and the JVM cost CPU even when nothing
 * happens, each figure also comes "above idle": minus the JVM's own idle rate, measured once at the start of
 * the run ({@link #measureIdle}) over the window's wall time.
 */
final class Cpu {

    private static volatile double idleNanosPerSecond = 0;

    private final long startNanos;
    private final long startWall;

    private Cpu(long startNanos) {
        this.startNanos = startNanos;
        this.startWall = System.nanoTime();
    }

    static Cpu start() {
        return new Cpu(processCpuNanos());
    }

    /** Measures the JVM's CPU over {@code window} with nothing running; answers it in ms per second. */
    static double measureIdle(Duration window) throws InterruptedException {
        Cpu cpu = start();
        Thread.sleep(window.toMillis());
        long spent = cpu.elapsedNanos();
        double seconds = (System.nanoTime() - cpu.startWall) / 1e9;
        idleNanosPerSecond = spent < 0 ? 0 : spent / seconds;
        return Stats.round(idleNanosPerSecond / 1e6, 1);
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

    /** CPU ms per 1,000 events since {@link #start()}, less the idle rate over the same wall time. */
    Double msPerThousandAboveIdle(long events) {
        return Stats.cpuMsPerThousandAboveIdle(elapsedNanos(), System.nanoTime() - startWall, idleNanosPerSecond, events);
    }

    private static long processCpuNanos() {
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
            return os.getProcessCpuTime();
        }
        return -1;
    }
}
