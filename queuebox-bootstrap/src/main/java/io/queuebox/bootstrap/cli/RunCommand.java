package io.queuebox.bootstrap.cli;

import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.bootstrap.internal.Logging;
import io.queuebox.bootstrap.internal.Relay;
import io.queuebox.bootstrap.internal.Signals;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import picocli.CommandLine.Command;

@Command(name = "run", mixinStandardHelpOptions = true,
        description = "Runs the relay until SIGTERM or SIGINT: claims due outbox rows, publishes them, records the"
                + " outcomes; serves /health/live, /health/ready and /metrics on http.port.")
final class RunCommand implements Callable<Integer> {

    private final CliContext context;

    RunCommand(CliContext context) {
        this.context = context;
    }

    @Override
    public Integer call() throws InterruptedException {
        QueueBoxConfig config = context.loadConfig();
        Logging.configure(config);
        CountDownLatch stop = new CountDownLatch(1);
        AtomicReference<Relay> running = new AtomicReference<>();
        // Handlers first: a SIGTERM during start must also end in an orderly stop and exit code 0.
        Signals.onTermination(stop, () -> {
            Relay relay = running.get();
            if (relay != null) {
                relay.close();
            }
        });
        Relay relay = Relay.start(config);
        running.set(relay);
        stop.await();
        relay.close();
        return ExitCodes.OK;
    }
}
