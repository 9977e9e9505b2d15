package io.queuebox.bootstrap.internal;

import io.queuebox.embed.config.ConfigProblem;
import io.queuebox.embed.config.Keys;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Optional;

/**
 * Whether this process can keep capture state in {@code outbox.capture.stateDirectory}, found without writing
 * anything: the directory, or the nearest existing one above it when it does not exist yet (start creates it),
 * must be a directory this user may write. The capture supervisor's own probe finds the same at start, but
 * only reports it on {@code /health/ready}; this says it where operators look first.
 */
public final class StateDirectoryCheck {

    private StateDirectoryCheck() {
    }

    /** The problem with {@code directory} for the user running this process, if any. */
    public static Optional<ConfigProblem> problem(Path directory) {
        String user = ProcessHandle.current().info().user().orElse("unknown");
        Path absolute = directory.toAbsolutePath();
        Path existing = absolute;
        while (existing != null && !Files.exists(existing, LinkOption.NOFOLLOW_LINKS) && !Files.exists(existing)) {
            existing = existing.getParent();
        }
        if (existing == null) {
            return Optional.empty();
        }
        String prefix = existing.equals(absolute) ? "" : "cannot be created: " + existing + " ";
        if (!Files.isDirectory(existing)) {
            String what = Files.isRegularFile(existing) ? "a regular file" : "not a directory";
            return problem(directory, (prefix.isEmpty() ? existing + " " : prefix) + "is " + what
                    + ", not a directory; set outbox.capture.stateDirectory to a directory path");
        }
        if (Files.isWritable(existing)) {
            return Optional.empty();
        }
        return problem(directory, prefix + "not writable by user '" + user + "'" + ownerAndMode(existing)
                + "; fix: chown " + user + " " + existing + " (or mount a durable volume there owned by " + user
                + "), or set outbox.capture.stateDirectory to a directory that user can write");
    }

    private static Optional<ConfigProblem> problem(Path directory, String text) {
        return Optional.of(new ConfigProblem(Keys.CAPTURE_STATE_DIRECTORY.name(), directory.toString(), text));
    }

    private static String ownerAndMode(Path path) {
        try {
            return " (owned by '" + Files.getOwner(path).getName() + "', mode "
                    + PosixFilePermissions.toString(Files.getPosixFilePermissions(path)) + ")";
        } catch (IOException | UnsupportedOperationException e) {
            return "";
        }
    }
}
