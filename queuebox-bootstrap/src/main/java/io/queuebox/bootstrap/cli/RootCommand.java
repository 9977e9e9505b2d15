package io.queuebox.bootstrap.cli;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;

@Command(name = "queuebox", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
        sortOptions = false, usageHelpAutoWidth = true,
        description = {"Transactional outbox relay: claims outbox rows through SQL and delivers them to a broker.",
                "Without a command, runs the relay (same as 'run')."},
        footerHeading = "%nExit codes:%n",
        footer = {"  0  ok (also after SIGTERM/SIGINT within shutdown.deadlineMs)",
                "  1  fatal error",
                "  2  bad configuration or command line (every problem is printed)",
                "  3  database unreachable at start after startup.databaseWaitMs",
                "",
                "Configuration: a YAML file (--config, default ./queuebox.yaml); every key",
                "can be overridden by QUEUEBOX_<KEY>, with dots and camelCase boundaries",
                "as _, upper-cased: outbox.pollIntervalMs -> QUEUEBOX_OUTBOX_POLL_INTERVAL_MS"})
final class RootCommand implements Callable<Integer> {

    private final CliContext context;
    private final Callable<Integer> defaultCommand;

    RootCommand(CliContext context, Callable<Integer> defaultCommand) {
        this.context = context;
        this.defaultCommand = defaultCommand;
    }

    @Option(names = {"-c", "--config"}, paramLabel = "FILE", scope = ScopeType.INHERIT,
            description = "Configuration file (YAML). Default: queuebox.yaml in the working directory, optional.")
    void config(Path file) {
        context.configFile(file);
    }

    @Override
    public Integer call() throws Exception {
        return defaultCommand.call();
    }
}
