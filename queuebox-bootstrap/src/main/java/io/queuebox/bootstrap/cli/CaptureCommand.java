package io.queuebox.bootstrap.cli;

import com.zaxxer.hikari.HikariDataSource;
import io.queuebox.embed.config.Databases;
import io.queuebox.embed.config.Keys;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.bootstrap.internal.DatabaseWait;
import io.queuebox.bootstrap.internal.Logging;
import io.queuebox.embed.internal.Pools;
import io.queuebox.embed.internal.Settings;
import io.queuebox.capture.FileCaptureStateDirectory;
import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureLock;
import io.queuebox.ports.CaptureSettings;
import io.queuebox.ports.CaptureSourceReport;
import io.queuebox.ports.CaptureStateRecord;
import io.queuebox.ports.CaptureStateStore;
import io.queuebox.jdbc.OutboxDatabase;
import io.queuebox.ports.CaptureSourceInspector;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(name = "capture", description = "Operator commands on change data capture: status and recovery.",
        mixinStandardHelpOptions = true)
final class CaptureCommand implements Runnable {

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    /** The pieces an operator command needs, on a small pool of its own. */
    record Parts(QueueBoxConfig config, CaptureSettings settings, CaptureStateStore stateStore,
                 FileCaptureStateDirectory directory, CaptureLock lock, CaptureSourceInspector inspector) {
    }

    @FunctionalInterface
    interface Action {
        int run(Parts parts, PrintWriter out, PrintWriter err);
    }

    static int withCapture(CliContext context, CommandSpec spec, Action action) {
        QueueBoxConfig config = context.loadConfig();
        Logging.configure(config.string(Keys.LOG_FORMAT), "WARN");
        // As capture itself: state and lock with the outbox, the source checks where capture reads (a replica
        // in outbox.capture.connection.* is the one asked about its slot), both with the capture account.
        boolean sourceElsewhere = Pools.captureSourceElsewhere(config);
        try (HikariDataSource pool = Pools.captureOperator(config);
             HikariDataSource sourcePool = sourceElsewhere ? Pools.captureSourceOperator(config) : null) {
            DatabaseWait.await(pool, config.string(Keys.DATABASE_URL), config.millis(Keys.STARTUP_DATABASE_WAIT_MS),
                    DatabaseWait.captureKeys(config, false));
            if (sourcePool != null) {
                DatabaseWait.await(sourcePool, Settings.captureUrl(config), config.millis(Keys.STARTUP_DATABASE_WAIT_MS),
                        DatabaseWait.captureKeys(config, true));
            }
            CaptureSettings settings = Settings.capture(config);
            OutboxDatabase database = Databases.of(config).open(pool, Settings.outbox(config));
            OutboxDatabase source = sourcePool == null ? database
                    : Databases.of(config).open(sourcePool, Settings.outbox(config));
            Parts parts = new Parts(config, settings, database.captureStateStore(),
                    new FileCaptureStateDirectory(Path.of(settings.stateDirectory())),
                    database.captureLock(), source.captureSourceInspector());
            PrintWriter out = spec.commandLine().getOut();
            PrintWriter err = spec.commandLine().getErr();
            int code = action.run(parts, out, err);
            out.flush();
            err.flush();
            return code;
        }
    }

    @Command(name = "status", mixinStandardHelpOptions = true,
            description = "Prints the capture identity, its owner, state and fault reason, the slot and its retained WAL.")
    static final class Status implements Callable<Integer> {
        private final CliContext context;

        @Spec
        CommandSpec spec;

        Status(CliContext context) {
            this.context = context;
        }

        @Override
        public Integer call() {
            return withCapture(context, spec, (parts, out, err) -> {
                CaptureSettings settings = parts.settings();
                out.printf("mode:            %s (enabled: %s)%n", settings.mode().configName(), settings.enabled());
                out.printf("state directory: %s%n", parts.directory().location());
                Optional<CaptureIdentity> fileIdentity = readIdentity(parts, out);
                out.printf("offsets:         %s%n", parts.directory().hasOffsets() ? "present" : "none");
                List<CaptureStateRecord> rows = parts.stateStore().findAll();
                if (rows.isEmpty()) {
                    out.println("identities:      none recorded in queuebox_capture_state");
                }
                for (CaptureStateRecord row : rows) {
                    String marker = fileIdentity.filter(row.identity()::equals).isPresent() ? " (this state directory)" : "";
                    out.printf("identity:        %s%s%n", row.identity(), marker);
                    out.printf("  mode:          %s, slot %s, publication %s, table %s.%s, host %s, database %s%n",
                            row.mode().configName(), row.fingerprint().slot(), row.fingerprint().publication(),
                            row.fingerprint().schema(), row.fingerprint().table(), row.fingerprint().host(),
                            row.fingerprint().database());
                    out.printf("  runs:          first %s, last %s%n", row.firstRunAt(), row.lastRunAt());
                    parts.stateStore().recordedStatus(row.identity()).ifPresentOrElse(
                            status -> out.printf("  state:         %s%s (at %s)%n", status.state(),
                                    status.faultReason() == null ? "" : ": " + status.faultReason(), status.recordedAt()),
                            () -> out.println("  state:         not recorded"));
                    out.printf("  owner:         %s%n", ownerOf(parts.lock(), row.identity()));
                }
                CaptureSourceReport report = parts.inspector().inspect(settings);
                // SQL Server has no slot: its change tables are trimmed by the CDC cleanup job instead.
                if (!settings.fingerprint().slot().isEmpty()) {
                    out.printf("slot:            %s %s, retained WAL %s%n", settings.fingerprint().slot(),
                        report.slotExists() ? "exists" : "does not exist",
                        report.retainedLogBytes().isPresent() ? report.retainedLogBytes().getAsLong() + " bytes" : "unknown");
                }
                if (report.ready()) {
                    out.println("source:          ready");
                } else {
                    report.problems().forEach(problem -> out.printf("source problem:  %s%n", problem));
                }
                return ExitCodes.OK;
            });
        }

        private static Optional<CaptureIdentity> readIdentity(Parts parts, PrintWriter out) {
            try {
                Optional<CaptureIdentity> identity = parts.directory().readIdentity();
                out.printf("identity file:   %s%n", identity.map(CaptureIdentity::value).orElse("none"));
                return identity;
            } catch (RuntimeException e) {
                out.printf("identity file:   unreadable (%s)%n", e.getMessage());
                return Optional.empty();
            }
        }

        private static String ownerOf(CaptureLock lock, CaptureIdentity identity) {
            Optional<CaptureLock.Held> held = lock.tryAcquire(identity);
            if (held.isEmpty()) {
                return "a running process holds the lock";
            }
            held.get().close();
            return "none (no process holds the lock now)";
        }
    }

    @Command(name = "reset", mixinStandardHelpOptions = true,
            description = {"Forgets a capture identity after a fault: deletes its row in queuebox_capture_state and,",
                    "when the state directory belongs to it, the files there. The next start with an empty state directory",
                    "begins fresh once no identity is recorded any more (any recorded one is STATE_MISSING).",
                    "Refuses while a process owns the identity. Never drops the replication slot."})
    static final class Reset implements Callable<Integer> {
        private final CliContext context;

        @Spec
        CommandSpec spec;

        @Option(names = "--identity", required = true, paramLabel = "ID", description = "The identity to forget.")
        String identity;

        @Option(names = "--confirm", description = "Required: resetting discards recorded log positions.")
        boolean confirm;

        Reset(CliContext context) {
            this.context = context;
        }

        @Override
        public Integer call() {
            CaptureIdentity target = new CaptureIdentity(identity);
            if (!confirm) {
                spec.commandLine().getErr().printf("capture reset discards the recorded log positions of %s;"
                        + " repeat with --confirm to do it%n", target);
                spec.commandLine().getErr().flush();
                return ExitCodes.BAD_CONFIGURATION;
            }
            return withCapture(context, spec, (parts, out, err) -> {
                Optional<CaptureLock.Held> held = parts.lock().tryAcquire(target);
                if (held.isEmpty()) {
                    err.printf("identity %s already has an owner: stop that process first%n", target);
                    return ExitCodes.FATAL;
                }
                try (CaptureLock.Held ignored = held.get()) {
                    boolean forgotten = parts.stateStore().forget(target);
                    out.printf("queuebox_capture_state: %s%n", forgotten ? "row of " + target + " deleted"
                            : "no row for " + target);
                    Optional<CaptureIdentity> fileIdentity = parts.directory().readIdentity();
                    if (fileIdentity.isEmpty() || fileIdentity.get().equals(target)) {
                        parts.directory().clear();
                        out.printf("state directory %s: cleared%n", parts.directory().location());
                    } else {
                        out.printf("state directory %s: left alone (it belongs to %s)%n", parts.directory().location(),
                                fileIdentity.get());
                    }
                    if (!parts.settings().fingerprint().slot().isEmpty()) {
                        out.printf("the replication slot %s was not touched; drop it by hand if you retire it%n",
                                parts.settings().fingerprint().slot());
                    }
                }
                return ExitCodes.OK;
            });
        }
    }
}
