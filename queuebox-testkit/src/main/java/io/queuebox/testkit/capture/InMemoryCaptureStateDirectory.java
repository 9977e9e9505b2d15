package io.queuebox.testkit.capture;

import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureStateDirectory;
import java.util.Objects;
import java.util.Optional;

/**
 * A state directory in memory. Tests put it in the situations reconciliation must recognise: empty,
 * holding offsets of some identity, or not writable (a volume mounted with the wrong owner). Thread-safe.
 */
public final class InMemoryCaptureStateDirectory implements CaptureStateDirectory {

    private final String location;
    private CaptureIdentity identity;
    private boolean offsets;
    private boolean history;
    private boolean writable = true;

    private InMemoryCaptureStateDirectory(String location) {
        this.location = Objects.requireNonNull(location, "location");
    }

    /** An empty, writable directory, as on a first start. */
    public static InMemoryCaptureStateDirectory empty() {
        return new InMemoryCaptureStateDirectory("memory:/var/lib/queuebox/capture");
    }

    /** A directory an earlier run of {@code identity} left behind: identity file and offsets. */
    public static InMemoryCaptureStateDirectory leftBy(CaptureIdentity identity) {
        InMemoryCaptureStateDirectory directory = empty();
        directory.writeIdentity(identity);
        directory.recordOffsets();
        return directory;
    }

    @Override
    public String location() {
        return location;
    }

    @Override
    public synchronized void checkWritable() {
        if (!writable) {
            throw new IllegalStateException("capture state directory " + location
                    + " is not writable by user queuebox");
        }
    }

    @Override
    public synchronized Optional<CaptureIdentity> readIdentity() {
        return Optional.ofNullable(identity);
    }

    @Override
    public synchronized void writeIdentity(CaptureIdentity newIdentity) {
        checkWritable();
        this.identity = Objects.requireNonNull(newIdentity, "identity");
    }

    @Override
    public synchronized boolean hasOffsets() {
        return offsets || history;
    }

    @Override
    public synchronized void clear() {
        checkWritable();
        identity = null;
        offsets = false;
        history = false;
    }

    /** What the connector does once it has read something: {@code offsets.dat} now exists. */
    public synchronized void recordOffsets() {
        offsets = true;
    }

    /** What the SQL Server connector does: {@code history.dat} now exists. */
    public synchronized void recordHistory() {
        history = true;
    }

    /** From now on the directory cannot be written, like a bind mount owned by another user. */
    public synchronized void makeUnwritable() {
        writable = false;
    }

    /** Loses every file, like a container restarted without its volume. */
    public synchronized void wipe() {
        identity = null;
        offsets = false;
        history = false;
    }
}
