package io.queuebox.example.filesink;

import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.MessagePublisherProvider;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;

/** {@code broker.type: file-sink}, with one setting: {@code broker.file-sink.directory}. */
public final class FileSinkPublisherProvider implements MessagePublisherProvider {

    @Override
    public String name() {
        return "file-sink";
    }

    @Override
    public MessagePublisher create(Map<String, String> settings) {
        for (String key : settings.keySet()) {
            if (!Set.of("directory").contains(key)) {
                throw new IllegalArgumentException("unknown file-sink setting '" + key + "', known: [directory]");
            }
        }
        String directory = settings.get("directory");
        if (directory == null || directory.isBlank()) {
            throw new IllegalArgumentException("directory is required, got: '" + directory + "'");
        }
        try {
            return new FileSinkPublisher(Path.of(directory));
        } catch (InvalidPathException e) {
            throw new IllegalArgumentException("directory is not a path: '" + directory + "'", e);
        }
    }
}
