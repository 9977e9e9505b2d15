package io.queuebox.bootstrap.cli;

import io.queuebox.domain.CaptureReconciliation;
import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureLock;
import io.queuebox.ports.CaptureMode;
import io.queuebox.ports.CaptureSettings;
import io.queuebox.ports.CaptureStateRecord;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code queuebox capture adopt}: the manual failover's middle step. Writes the identity file of a recorded
 * identity into an empty state directory, so that the next start there reconciles to Resume (the directory's
 * identity, its row, the same settings) instead of STATE_MISSING or a fresh identity. Every check that start
 * would make against the table and the lock is made here first, so a refusal comes before anything is written.
 */
@Command(name = "adopt", mixinStandardHelpOptions = true,
        description = {"Recreates the state directory (outbox.capture.stateDirectory) for a recorded capture identity,",
                "to move capture to another process or volume: writes its identity file. The next start there resumes",
                "that identity (on PostgreSQL on its replication slot). Refuses when the directory holds another",
                "identity or offsets, when the identity is not recorded in queuebox_capture_state or ran with other",
                "settings than the current ones, and while a process owns the identity."})
final class CaptureAdoptCommand implements Callable<Integer> {

    private final CliContext context;

    @Spec
    CommandSpec spec;

    @Option(names = "--identity", required = true, paramLabel = "ID",
            description = "The recorded identity to take over (see queuebox capture status).")
    String identity;

    CaptureAdoptCommand(CliContext context) {
        this.context = context;
    }

    @Override
    public Integer call() {
        CaptureIdentity target;
        try {
            target = new CaptureIdentity(identity);
        } catch (IllegalArgumentException e) {
            spec.commandLine().getErr().printf("--identity: %s%n", e.getMessage());
            spec.commandLine().getErr().flush();
            return ExitCodes.BAD_CONFIGURATION;
        }
        return CaptureCommand.withCapture(context, spec, (parts, out, err) -> {
            CaptureSettings settings = parts.settings();
            String location = parts.directory().location();
            Optional<CaptureStateRecord> row = parts.stateStore().find(target);
            if (row.isEmpty()) {
                List<String> recorded = parts.stateStore().findAll().stream()
                        .map(r -> r.identity().value()).toList();
                err.printf("identity %s is not recorded in queuebox_capture_state (recorded: %s): only an identity"
                        + " that ran against this database can be adopted%n", target,
                        recorded.isEmpty() ? "none" : String.join(", ", recorded));
                return ExitCodes.BAD_CONFIGURATION;
            }
            List<String> changes = CaptureReconciliation.settingsChanges(row.get(), settings.fingerprint(),
                    settings.mode());
            if (!changes.isEmpty()) {
                err.printf("identity %s ran with other settings than this configuration: %s. Its recorded position"
                        + " belongs to those settings: adopt it with the settings it ran with, or reset it"
                        + " (queuebox capture reset) to start fresh%n", target, String.join(", ", changes));
                return ExitCodes.BAD_CONFIGURATION;
            }
            Optional<CaptureIdentity> fileIdentity = parts.directory().readIdentity();
            if (fileIdentity.isPresent() && !fileIdentity.get().equals(target)) {
                err.printf("state directory %s already belongs to identity %s: adopt into an empty directory%n",
                        location, fileIdentity.get());
                return ExitCodes.FATAL;
            }
            if (fileIdentity.isEmpty() && parts.directory().hasOffsets()) {
                err.printf("state directory %s holds offsets but no identity file, so nobody can tell whose"
                        + " position they are: adopt into an empty directory%n", location);
                return ExitCodes.FATAL;
            }
            Optional<CaptureLock.Held> held = parts.lock().tryAcquire(target);
            if (held.isEmpty()) {
                err.printf("identity %s already has an owner: stop that process first (or set"
                        + " outbox.capture.enabled: false there and restart it)%n", target);
                return ExitCodes.FATAL;
            }
            try (CaptureLock.Held ignored = held.get()) {
                if (fileIdentity.isPresent()) {
                    out.printf("state directory %s: already holds identity %s; nothing to do%n", location, target);
                    return ExitCodes.OK;
                }
                try {
                    parts.directory().checkWritable();
                } catch (IllegalStateException notWritable) {
                    err.println(notWritable.getMessage());
                    return ExitCodes.FATAL;
                }
                parts.directory().writeIdentity(target);
            }
            out.printf("state directory %s: identity file written for %s%n", location, target);
            out.printf("start QueueBox with outbox.capture.stateDirectory %s: it resumes identity %s%s%n", location,
                    target, settings.mode() == CaptureMode.POSTGRES_LOGICAL
                            ? " on the replication slot " + settings.fingerprint().slot() : "");
            return ExitCodes.OK;
        });
    }
}
