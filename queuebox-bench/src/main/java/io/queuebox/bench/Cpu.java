package io.queuebox.bench;

import java.lang.management.ManagementFactory;
import java.time.Duration;

/**
 * CPU time of the bench JVM across a measured window ({@code com.sun.management.OperatingSystemMXBean}). It is
 * the whole process: the relay or peer under test, and whatever else the bench runs in the same JVM during the
 * window (producers, the RabbitMQ consumer, the in-process Kafka broker when there is one, JIT and GC).
 * PostgreSQL's own CPU is not in it. Because the in-process broker and the JVM cost CPU even when nothing
 * happens, each figure also comes "above idle": minus the JVM's own idle rate, measured once at the start of
 * the run ({@link #measureIdle}) over the window's wall time. Beside it, the whole machine's busy CPU over the same
 * window ({@link MachineCpu}: PostgreSQL and RabbitMQ included), above the machine's idle rate measured at the same
 * time.
 */
final class Cpu {

    private static volatile double idleNanosPerSecond = 0;
    private static volatile double machineIdleMillisPerSecond = 0;

    private final long startNanos;
    private final long startWall;
    private final long[] machineStart;

    private final long startCompileMillis;

    private Cpu(long startNanos) {
        this.startNanos = startNanos;
        this.startCompileMillis = compileMillis();
        this.startWall = System.nanoTime();
        this.machineStart = MachineCpu.jiffies();
    }

    static Cpu start() {
        return new Cpu(processCpuNanos());
    }

    /** The machine's busy CPU ms per second with nothing running, from the last {@link #measureIdle}. */
    static double machineIdleMillisPerSecond() {
        return Stats.round(machineIdleMillisPerSecond, 1);
    }

    /** Measures the JVM's CPU over {@code window} with nothing running; answers it in ms per second. */
    static double measureIdle(Duration window) throws InterruptedException {
        Cpu cpu = start();
        Thread.sleep(window.toMillis());
        long spent = cpu.elapsedNanos();
        long wall = System.nanoTime() - cpu.startWall;
        Double machine = MachineCpu.busyMillis(cpu.machineStart, MachineCpu.jiffies(), wall);
        double seconds = wall / 1e9;
        idleNanosPerSecond = spent < 0 ? 0 : spent / seconds;
        machineIdleMillisPerSecond = machine == null ? 0 : machine / seconds;
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

    /**
     * The whole machine's busy CPU ms per 1,000 events since {@link #start()}, less its idle rate over the same wall
     * time; null off Linux.
     */
    Double machineMsPerThousandAboveIdle(long events) {
        long wall = System.nanoTime() - startWall;
        Double busy = MachineCpu.busyMillis(machineStart, MachineCpu.jiffies(), wall);
        if (busy == null || events <= 0) {
            return null;
        }
        double above = Math.max(0, busy - machineIdleMillisPerSecond * wall / 1e9);
        return Stats.round(above * 1000.0 / events, 2);
    }

    /**
     * Milliseconds the JVM's JIT compilers spent since {@link #start()} (summed over the compiler threads), or null where
     * the JVM does not say: a latency cell measured while they still compile shares the machine's CPU with them.
     */
    Long compileMillisSinceStart() {
        long now = compileMillis();
        return now < 0 || startCompileMillis < 0 ? null : now - startCompileMillis;
    }

    /** The JVM's JIT compile time so far, in ms (summed over the compiler threads); -1 where the JVM does not say. */
    static long compileMillis() {
        var compiler = ManagementFactory.getCompilationMXBean();
        return compiler != null && compiler.isCompilationTimeMonitoringSupported() ? compiler.getTotalCompilationTime() : -1;
    }

    private static long processCpuNanos() {
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
            return os.getProcessCpuTime();
        }
        return -1;
    }
}
