package io.queuebox.bootstrap.cli;

import io.queuebox.embed.config.Databases;
import io.queuebox.jdbc.DatabaseProvider;
import io.queuebox.embed.config.ConfigException;
import io.queuebox.embed.config.ConfigProblem;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.bootstrap.internal.Preflight;
import java.io.PrintWriter;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

@Command(name = "config", description = "Inspect the configuration.", mixinStandardHelpOptions = true)
final class ConfigCommand implements Runnable {

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    @Command(name = "check", mixinStandardHelpOptions = true,
            description = "Loads and validates the configuration (file, then environment) and prints the effective"
                    + " values with their origin, secrets masked. Also checks the broker settings as run does (without"
                    + " connecting) and, with capture on, the state directory. Exits 2 listing every problem.")
    static final class Check implements Callable<Integer> {

        private final CliContext context;

        @Spec
        CommandSpec spec;

        Check(CliContext context) {
            this.context = context;
        }

        @Override
        public Integer call() {
            QueueBoxConfig config = context.loadConfig();
            List<ConfigProblem> problems = Preflight.problems(config);
            if (!problems.isEmpty()) {
                throw new ConfigException(problems);
            }
            PrintWriter out = spec.commandLine().getOut();
            out.println("Configuration is valid (" + context.configFileOrDefault() + " and QUEUEBOX_ environment variables).");
            DatabaseProvider database = Databases.of(config);
            out.println("Database: " + database.displayName() + " (chosen by database.url; capture modes: polling, "
                    + database.captureMode().configName() + ")");
            // Plug-in adapters show up here, so an operator sees that the folder was read.
            out.println("Broker providers: " + String.join(", ", CliContext.brokerNames()) + " (broker.type chooses)");
            config.describe().forEach(out::println);
            out.flush();
            return ExitCodes.OK;
        }
    }
}
