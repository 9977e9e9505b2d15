package io.queuebox.ports;

import java.util.Optional;

/**
 * The state directory ({@code outbox.capture.stateDirectory}) with {@code offsets.dat} (the log position
 * capture already read), {@code history.dat} (schema history, SQL Server only) and {@code identity}.
 */
public interface CaptureStateDirectory {

    /** Where the files live, for messages. */
    String location();

    /**
     * Fails with {@link IllegalStateException} naming the path and the operating-system user when the
     * directory does not exist and cannot be created, or cannot be written.
     */
    void checkWritable();

    /** The identity recorded in the directory, if any. */
    Optional<CaptureIdentity> readIdentity();

    /** Writes the identity file (atomically: a crash leaves either the old file or the new one). */
    void writeIdentity(CaptureIdentity identity);

    /** Whether any capture state (offsets or history) exists. */
    boolean hasOffsets();

    /** Deletes every state file: the operator's recovery step. */
    void clear();
}
