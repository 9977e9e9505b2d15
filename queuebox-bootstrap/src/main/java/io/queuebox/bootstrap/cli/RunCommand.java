package io.queuebox.bootstrap.cli;

import io.queuebox.bootstrap.config.QueueBoxConfig;
import io.queuebox.bootstrap.internal.Logging;
import io.queuebox.bootstrap.internal.Relay;
import io.queuebox.bootstrap.internal.Signals;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
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
        Relay relay = Relay.start(config);
        Signals.onTermination(stop, relay::close);
        stop.await();
        relay.close();
        return ExitCodes.OK;
    }
}
