package io.queuebox.demo;

import io.queuebox.bootstrap.internal.Signals;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code queuebox demo}: a working relay in one command, with nothing installed but a JDK. */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = {"Run a self-contained demo: an embedded PostgreSQL and an in-process Kafka broker in a",
                "temporary directory, an application writing orders with their events in one transaction,",
                "the relay, and a consumer. Prints a line a second until Ctrl-C; removes all its data on exit."})
public final class DemoCommand implements Callable<Integer> {

    @Option(names = "--rate", defaultValue = "50", paramLabel = "N",
            description = "Orders written per second (default: ${DEFAULT-VALUE}).")
    int rate;

    @Option(names = "--capture", description = "Wake delivery from the PostgreSQL log (postgres-logical) instead of polling.")
    boolean capture;

    @Option(names = "--duration", defaultValue = "0", paramLabel = "SECONDS",
            description = "Stop after this many seconds; 0 runs until Ctrl-C (default).")
    int durationSeconds;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        if (rate < 1 || rate > 5000) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(),
                    "--rate: '" + rate + "' is out of range, allowed: 1-5000");
        }
        PrintWriter out = spec.commandLine().getOut();
        CountDownLatch stop = new CountDownLatch(1);
        Signals.onTermination(stop, stop::countDown);
        Path directory = Files.createTempDirectory("queuebox-demo-");
        try (DemoRun run = DemoRun.start(directory, rate, capture, out)) {
            if (durationSeconds > 0) {
                stop.await(durationSeconds, TimeUnit.SECONDS);
            } else {
                stop.await();
            }
            out.println("stopping: the relay finishes in-flight batches, then everything is removed");
            out.flush();
        } finally {
            deleteRecursively(directory);
        }
        out.println("demo data removed from " + directory);
        out.flush();
        return 0;
    }

    private static void deleteRecursively(Path directory) {
        if (!Files.exists(directory)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(directory)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> {
                try {
                    Files.deleteIfExists(path);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException("cannot remove " + directory, e);
        }
    }

    static Duration elapsedSince(long startNanos) {
        return Duration.ofNanos(System.nanoTime() - startNanos);
    }
}
