package io.queuebox.bench;

import io.queuebox.embed.config.Databases;
import io.queuebox.jdbc.DatabaseProvider;
import io.queuebox.jdbc.OutboxTable;
import java.util.OptionalInt;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.queuebox.domain.DeliverySettings;
import io.queuebox.ports.MessagePublisher;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A relay in a JVM of its own, for the backlog-memory and scale-out workloads. It talks to its parent over
 * standard streams: it prints {@code READY}, starts delivering on {@code GO}, stops when it delivered
 * {@code stopAfter} rows (0: never) or reads {@code STOP}, and prints {@code RESULT <json>}. With
 * {@code stopAfter} 0 it answers each {@code MARK} with {@code MARK <json>}: its counters so far (delivered,
 * failures, claims, empty claims, milliseconds spent claiming and publishing, the JVM's CPU milliseconds), which the parent subtracts to
 * get the figures of one phase.
 *
 * <p>Arguments: jdbcUrl broker rabbitUri kafkaBootstrap workers batch ordered stopAfter.
 */
final class ChildRelay {

    private ChildRelay() {
    }

    public static void main(String[] args) throws Exception {
        String jdbcUrl = args[0];
        String broker = args[1];
        int workers = Integer.parseInt(args[4]);
        int batch = Integer.parseInt(args[5]);
        boolean ordered = Boolean.parseBoolean(args[6]);
        long stopAfter = Long.parseLong(args[7]);
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(jdbcUrl);
        // Each worker may have pipelineDepth batches out, each needing a connection while it claims or records.
        config.setMaximumPoolSize(workers * DeliverySettings.DEFAULT_PIPELINE_DEPTH + 2);
        config.setPoolName("bench-child");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Map<String, Object> result = new LinkedHashMap<>();
        try (HikariDataSource pool = new HikariDataSource(config);
             MessagePublisher publisher = broker.equals("none") ? Relay.NO_OP
                     : Brokers.relayPublisher(broker, args[2], args[3])) {
            DatabaseProvider database = Databases.forUrl(jdbcUrl).orElseThrow();
            Relay relay = new Relay(database.open(pool, new OutboxTable(database.defaultSchema(), "queuebox_outbox", false,
                    OptionalInt.empty(), database.holdsRowLocksByDefault())).store(), publisher,
                    Relay.settings(ordered, workers, batch, Duration.ofMillis(100)), List.of());
            System.out.println("READY");
            System.out.flush();
            if (!"GO".equals(in.readLine())) {
                return;
            }
            Sampler sampler = new Sampler(relay, stopAfter);
            Thread samplerThread = new Thread(sampler, "bench-memory-sampler");
            samplerThread.setDaemon(true);
            samplerThread.start();
            long start = System.nanoTime();
            relay.start();
            if (stopAfter > 0) {
                relay.awaitDelivered(stopAfter, Duration.ofMinutes(30));
            } else {
                for (String line = in.readLine(); line != null && !line.equals("STOP"); line = in.readLine()) {
                    if (line.equals("MARK")) {
                        System.out.println("MARK " + new ObjectMapper().writeValueAsString(counters(relay)));
                        System.out.flush();
                    }
                }
            }
            double seconds = Brokers.seconds(start);
            relay.close();
            sampler.stop();
            samplerThread.join();
            result.putAll(counters(relay));
            result.put("lastError", relay.lastError.get());
            result.put("seconds", Latency.round(seconds, 2));
            result.putAll(sampler.summary());
        }
        System.out.println("RESULT " + new ObjectMapper().writeValueAsString(result));
        System.out.flush();
        System.exit(0);
    }

    /** What the relay did so far: the figures of a {@code MARK} and the start of the {@code RESULT}. */
    private static Map<String, Object> counters(Relay relay) {
        Map<String, Object> counters = new LinkedHashMap<>();
        counters.put("delivered", relay.delivered.get());
        counters.put("failures", relay.failures.get());
        counters.put("claims", relay.claims.get());
        counters.put("emptyClaims", relay.emptyClaims.get());
        counters.put("claimMillis", relay.claimNanos.get() / 1_000_000);
        counters.put("publishMillis", relay.publishNanos.get() / 1_000_000);
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
            counters.put("cpuMillis", os.getProcessCpuTime() / 1_000_000);
        }
        // How much of the JVM's CPU went to compiling and collecting rather than relaying: the CPU of its JIT compiler
        // threads and of its GC threads, from /proc (Linux; absent elsewhere).
        Map<String, Long> byKind = threadCpuMillis();
        if (!byKind.isEmpty()) {
            counters.put("jitCpuMillis", byKind.getOrDefault("jit", 0L));
            counters.put("gcCpuMillis", byKind.getOrDefault("gc", 0L));
        }
        return counters;
    }

    /** CPU milliseconds of this JVM's threads by kind ("jit", "gc", "other"), from /proc/self/task; empty without it. */
    private static Map<String, Long> threadCpuMillis() {
        Map<String, Long> millis = new LinkedHashMap<>();
        Path tasks = Path.of("/proc/self/task");
        if (!Files.isDirectory(tasks)) {
            return millis;
        }
        try (var threads = Files.list(tasks)) {
            for (Path task : (Iterable<Path>) threads::iterator) {
                try {
                    String name = Files.readString(task.resolve("comm")).trim();
                    String stat = Files.readString(task.resolve("stat"));
                    // Fields after the command name, which is in parentheses and may hold spaces: state is field 3,
                    // utime and stime fields 14 and 15, in clock ticks (100 a second on Linux).
                    String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                    long ticks = Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
                    String kind = name.contains("Compiler") ? "jit"
                            : name.startsWith("GC ") || name.startsWith("G1 ") ? "gc" : "other";
                    millis.merge(kind, ticks * 10, Long::sum);
                } catch (java.io.IOException | RuntimeException gone) {
                    // the thread ended meanwhile
                }
            }
        } catch (java.io.IOException e) {
            return Map.of();
        }
        return millis;
    }

    /** Heap every 50 ms; the heap after collection (the live set) at each tenth of the work. */
    private static final class Sampler implements Runnable {
        private final Relay relay;
        private final long rows;
        private volatile boolean stopped;
        private long peakHeapUsed;
        private long peakLiveAfterGc;
        private final List<Map<String, Object>> curve = new ArrayList<>();

        private volatile long lastLiveAfterGc;

        Sampler(Relay relay, long rows) {
            this.relay = relay;
            this.rows = rows;
            // The live set: the heap right after each collection, summed over the heap pools.
            for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
                if (gc instanceof javax.management.NotificationEmitter emitter) {
                    emitter.addNotificationListener((notification, handback) -> {
                        if (!com.sun.management.GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION
                                .equals(notification.getType())) {
                            return;
                        }
                        var info = com.sun.management.GarbageCollectionNotificationInfo.from(
                                (javax.management.openmbean.CompositeData) notification.getUserData());
                        long after = 0;
                        for (var entry : info.getGcInfo().getMemoryUsageAfterGc().entrySet()) {
                            if (HEAP_POOLS.contains(entry.getKey())) {
                                after += entry.getValue().getUsed();
                            }
                        }
                        lastLiveAfterGc = after;
                        synchronized (this) {
                            peakLiveAfterGc = Math.max(peakLiveAfterGc, after);
                        }
                    }, null, null);
                }
            }
        }

        private static final java.util.Set<String> HEAP_POOLS = heapPools();

        private static java.util.Set<String> heapPools() {
            java.util.Set<String> names = new java.util.HashSet<>();
            for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
                if (pool.getType() == MemoryType.HEAP) {
                    names.add(pool.getName());
                }
            }
            return names;
        }

        void stop() {
            stopped = true;
        }

        @Override
        public void run() {
            int nextTenth = 0;
            while (!stopped) {
                long used = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
                peakHeapUsed = Math.max(peakHeapUsed, used);
                long live = lastLiveAfterGc;
                if (rows > 0 && relay.delivered.get() >= rows * nextTenth / 10) {
                    Map<String, Object> point = new LinkedHashMap<>();
                    point.put("delivered", relay.delivered.get());
                    point.put("heapUsedMiB", mib(used));
                    point.put("heapAfterLastGcMiB", mib(live));
                    curve.add(point);
                    nextTenth++;
                }
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }


        Map<String, Object> summary() throws Exception {
            Map<String, Object> summary = new LinkedHashMap<>();
            summary.put("maxHeapMiB", mib(Runtime.getRuntime().maxMemory()));
            summary.put("peakHeapUsedMiB", mib(peakHeapUsed));
            synchronized (this) {
                summary.put("peakHeapAfterGcMiB", mib(peakLiveAfterGc));
            }
            long count = 0;
            long time = 0;
            for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
                count += gc.getCollectionCount();
                time += gc.getCollectionTime();
            }
            summary.put("gcCount", count);
            summary.put("gcMillis", time);
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmHWM:") || line.startsWith("VmRSS:")) {
                    String[] parts = line.split("\\s+");
                    summary.put(line.startsWith("VmHWM") ? "rssPeakMiB" : "rssMiB", Long.parseLong(parts[1]) / 1024);
                }
            }
            summary.put("curve", curve);
            return summary;
        }

        private static double mib(long bytes) {
            return Latency.round(bytes / 1048576.0, 1);
        }
    }
}
