package io.queuebox.bootstrap.cli;

import com.zaxxer.hikari.HikariDataSource;
import io.queuebox.embed.config.Databases;
import io.queuebox.embed.config.Keys;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.bootstrap.internal.DatabaseWait;
import io.queuebox.bootstrap.internal.Logging;
import io.queuebox.embed.internal.Pools;
import io.queuebox.embed.internal.Settings;
import io.queuebox.ports.BacklogStats;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkedEvent;
import io.queuebox.ports.ReplaySelector;
import java.io.PrintWriter;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.function.BiFunction;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(name = "outbox", description = "Operator commands on the outbox table.", mixinStandardHelpOptions = true)
final class OutboxCommand implements Runnable {

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    /** Opens a small pool and the store for one operator command. */
    static <T> T withStore(CliContext context, BiFunction<QueueBoxConfig, OutboxStore, T> action) {
        QueueBoxConfig config = context.loadConfig();
        Logging.configure(config.string(Keys.LOG_FORMAT), "WARN");
        try (HikariDataSource pool = Pools.operator(config)) {
            DatabaseWait.await(pool, config.string(Keys.DATABASE_URL), config.millis(Keys.STARTUP_DATABASE_WAIT_MS));
            return action.apply(config, Databases.of(config).open(pool, Settings.outbox(config)).store());
        }
    }

    @Command(name = "stats", mixinStandardHelpOptions = true,
            description = "Prints pending, leased and parked rows and the age of the oldest pending row.")
    static final class Stats implements Callable<Integer> {
        private final CliContext context;

        @Spec
        CommandSpec spec;

        Stats(CliContext context) {
            this.context = context;
        }

        @Override
        public Integer call() {
            return withStore(context, (config, store) -> {
                BacklogStats stats = store.stats();
                PrintWriter out = spec.commandLine().getOut();
                out.printf("outbox:  %s.%s%n", config.string(Keys.OUTBOX_SCHEMA), config.string(Keys.OUTBOX_TABLE));
                out.printf("pending: %d%n", stats.pending());
                out.printf("leased:  %d%n", stats.leased());
                out.printf("parked:  %d%n", stats.parked());
                out.printf("oldest pending age: %s%n", stats.oldestPendingAge()
                        .map(age -> age.toMillis() + " ms").orElse("none pending"));
                out.flush();
                return ExitCodes.OK;
            });
        }
    }

    /** Which parked events: exactly one of the ways. */
    static final class Selection {
        @Option(names = "--event-id", paramLabel = "UUID", description = "An event id; repeatable.")
        List<UUID> eventIds;

        @Option(names = "--aggregate", arity = "2", paramLabel = "TYPE ID", hideParamSyntax = true,
                description = "Every parked event of one aggregate: its type and id.")
        List<String> aggregate;

        @Option(names = "--all-parked", description = "Every parked event.")
        boolean allParked;

        ReplaySelector selector() {
            if (eventIds != null && !eventIds.isEmpty()) {
                return ReplaySelector.events(Set.copyOf(eventIds));
            }
            if (aggregate != null && aggregate.size() == 2) {
                return ReplaySelector.aggregate(aggregate.get(0), aggregate.get(1));
            }
            return ReplaySelector.allParked();
        }
    }

    @Command(name = "parked", mixinStandardHelpOptions = true,
            description = "Lists parked events in write order, with attempts and the last error.")
    static final class Parked implements Callable<Integer> {
        private final CliContext context;

        @Spec
        CommandSpec spec;

        @Option(names = "--aggregate", arity = "2", paramLabel = "TYPE ID", hideParamSyntax = true, description = "Only this aggregate's events.")
        List<String> aggregate;

        @Option(names = "--limit", defaultValue = "100", description = "Most events to list (default ${DEFAULT-VALUE}).")
        int limit;

        Parked(CliContext context) {
            this.context = context;
        }

        @Override
        public Integer call() {
            ReplaySelector selector = aggregate == null ? ReplaySelector.allParked()
                    : ReplaySelector.aggregate(aggregate.get(0), aggregate.get(1));
            return withStore(context, (config, store) -> {
                List<ParkedEvent> parked = store.parked(selector, limit);
                print(spec.commandLine().getOut(), parked);
                return ExitCodes.OK;
            });
        }
    }

    static void print(PrintWriter out, List<ParkedEvent> parked) {
        out.println(parked.size() + " parked event(s)");
        for (ParkedEvent event : parked) {
            out.printf("%s  seq=%d  %s/%s  %s  attempts=%d  created=%s  last error: %s%n",
                    event.event().eventId(), event.sequence(), event.event().aggregateType(),
                    event.event().aggregateId(), event.event().eventType(), event.attempts(), event.createdAt(),
                    event.lastError() == null ? "-" : event.lastError());
        }
        out.flush();
    }

    @Command(name = "replay", mixinStandardHelpOptions = true,
            description = "Makes parked events pending again (due now, attempts reset). Choose exactly one of"
                    + " --event-id, --aggregate or --all-parked.")
    static final class Replay implements Callable<Integer> {
        private final CliContext context;

        @Spec
        CommandSpec spec;

        @ArgGroup(exclusive = true, multiplicity = "1")
        Selection selection;

        @Option(names = "--dry-run", description = "Lists what would be replayed, changes nothing.")
        boolean dryRun;

        @Option(names = "--limit", defaultValue = "1000", description = "Dry run: most events to list (default ${DEFAULT-VALUE}).")
        int limit;

        Replay(CliContext context) {
            this.context = context;
        }

        @Override
        public Integer call() {
            ReplaySelector selector = selection.selector();
            return withStore(context, (config, store) -> {
                PrintWriter out = spec.commandLine().getOut();
                if (dryRun) {
                    out.print("dry run, nothing changed: ");
                    print(out, store.parked(selector, limit));
                } else {
                    out.println(store.replay(selector) + " event(s) replayed");
                    out.flush();
                }
                return ExitCodes.OK;
            });
        }
    }

}
