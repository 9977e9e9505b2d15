package io.queuebox.capture;

import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureStateDirectory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Optional;

/**
 * The state directory on disk: {@code offsets.dat} (Debezium's file offset store), {@code history.dat}
 * (schema history, SQL Server only) and {@code identity}.
 */
public final class FileCaptureStateDirectory implements CaptureStateDirectory {

    static final String OFFSETS_FILE = "offsets.dat";
    static final String HISTORY_FILE = "history.dat";
    static final String IDENTITY_FILE = "identity";

    private final Path directory;

    public FileCaptureStateDirectory(Path directory) {
        this.directory = directory.toAbsolutePath().normalize();
    }

    public Path offsetsFile() {
        return directory.resolve(OFFSETS_FILE);
    }

    public Path historyFile() {
        return directory.resolve(HISTORY_FILE);
    }

    @Override
    public String location() {
        return directory.toString();
    }

    @Override
    public void checkWritable() {
        String user = ProcessHandle.current().info().user().orElse("unknown");
        try {
            Files.createDirectories(directory);
            Path probe = Files.createTempFile(directory, ".write-check", ".tmp");
            Files.delete(probe);
        } catch (IOException | SecurityException e) {
            throw new IllegalStateException("outbox.capture.stateDirectory: '" + directory
                    + "' is not writable by user '" + user + "' (" + e.getClass().getSimpleName() + ": "
                    + e.getMessage() + "). Mount a durable volume there owned by that user.", e);
        }
    }

    @Override
    public Optional<CaptureIdentity> readIdentity() {
        Path file = directory.resolve(IDENTITY_FILE);
        if (!Files.isRegularFile(file)) {
            return Optional.empty();
        }
        try {
            String text = Files.readString(file, StandardCharsets.UTF_8).trim();
            return text.isEmpty() ? Optional.empty() : Optional.of(new CaptureIdentity(text));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }

    @Override
    public void writeIdentity(CaptureIdentity identity) {
        Path file = directory.resolve(IDENTITY_FILE);
        try {
            Files.createDirectories(directory);
            Path temp = Files.createTempFile(directory, ".identity", ".tmp");
            Files.writeString(temp, identity.value() + "\n", StandardCharsets.UTF_8);
            try {
                Files.move(temp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(temp, file, StandardCopyOption.REPLACE_EXISTING);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }

    @Override
    public boolean hasOffsets() {
        return nonEmpty(offsetsFile()) || nonEmpty(historyFile());
    }

    @Override
    public void clear() {
        for (String name : List.of(OFFSETS_FILE, HISTORY_FILE, IDENTITY_FILE)) {
            try {
                Files.deleteIfExists(directory.resolve(name));
            } catch (IOException e) {
                throw new UncheckedIOException("cannot delete " + directory.resolve(name), e);
            }
        }
    }

    private static boolean nonEmpty(Path file) {
        try {
            return Files.isRegularFile(file) && Files.size(file) > 0;
        } catch (IOException e) {
            return false;
        }
    }
}
