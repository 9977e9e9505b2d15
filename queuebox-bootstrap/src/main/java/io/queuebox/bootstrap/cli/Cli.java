package io.queuebox.bootstrap.cli;

import io.queuebox.embed.config.ConfigException;
import io.queuebox.embed.config.Masking;
import io.queuebox.bootstrap.internal.DatabaseUnreachableException;
import java.io.PrintWriter;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeSet;
import picocli.CommandLine;

/**
 * The {@code queuebox} command line. Runs in-process (tests call {@link #execute} with their own
 * environment and writers); only {@link io.queuebox.bootstrap.Main} exits the JVM.
 */
public final class Cli {

    private final CommandLine commandLine;

    private Cli(Map<String, String> environment, PrintWriter out, PrintWriter err) {
        CliContext context = new CliContext(environment);
        RunCommand run = new RunCommand(context);
        commandLine = new CommandLine(new RootCommand(context, run))
                .addSubcommand(run)
                .addSubcommand(new MigrateCommand(context))
                .addSubcommand(new CommandLine(new ConfigCommand()).addSubcommand(new ConfigCommand.Check(context)))
                .addSubcommand(new CommandLine(new OutboxCommand())
                        .addSubcommand(new OutboxCommand.Stats(context))
                        .addSubcommand(new OutboxCommand.Parked(context))
                        .addSubcommand(new OutboxCommand.Replay(context)))
                .addSubcommand(new CommandLine(new CaptureCommand())
                        .addSubcommand(new CaptureCommand.Status(context))
                        .addSubcommand(new CaptureCommand.Reset(context))
                        .addSubcommand(new CaptureAdoptCommand(context)))
                .addSubcommand(new CommandLine.HelpCommand());
        Set<String> added = new TreeSet<>();
        for (CommandProvider provider : ServiceLoader.load(CommandProvider.class, Cli.class.getClassLoader())) {
            commandLine.addSubcommand(provider.name(), provider.command());
            added.add(provider.name());
        }
        if (!added.contains("demo")) {
            commandLine.addSubcommand(new MissingDemoCommand());
        }
        commandLine.setOut(out).setErr(err);
        commandLine.setExecutionExceptionHandler(Cli::handle);
    }

    /** Runs the command line and answers the exit code (see {@link ExitCodes}). */
    public static int execute(Map<String, String> environment, PrintWriter out, PrintWriter err, String... args) {
        return new Cli(environment, out, err).commandLine.execute(args);
    }

    private static int handle(Exception e, CommandLine commandLine, CommandLine.ParseResult parseResult) {
        PrintWriter err = commandLine.getErr();
        int code;
        if (e instanceof ConfigException config) {
            err.println(config.problems().size() + " configuration problem(s):");
            config.problems().forEach(problem -> err.println("  - " + problem));
            code = ExitCodes.BAD_CONFIGURATION;
        } else if (e instanceof DatabaseUnreachableException) {
            err.println("database unreachable: " + Masking.maskUrl(e.getMessage()));
            code = ExitCodes.DATABASE_UNREACHABLE;
        } else {
            err.println("fatal: " + Masking.maskUrl(String.valueOf(e)));
            code = ExitCodes.FATAL;
        }
        err.flush();
        return code;
    }
}
