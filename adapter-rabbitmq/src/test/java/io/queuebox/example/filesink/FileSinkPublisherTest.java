package io.queuebox.example.filesink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.MessagePublisherProvider;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.testkit.publisher.MessagePublisherContract;
import io.queuebox.testkit.publisher.ReceivedMessage;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The example adapter passes the same contract as the Kafka and RabbitMQ adapters. */
class FileSinkPublisherTest extends MessagePublisherContract {

    @TempDir
    Path directory;

    @Override
    protected MessagePublisher newPublisher() {
        return new FileSinkPublisher(directory);
    }

    @Override
    protected MessagePublisher newPublisherForUnreachableBroker() {
        // A directory below a regular file can never be created: every write fails with an IOException.
        try {
            Path file = Files.createFile(directory.resolve("not-a-directory"));
            return new FileSinkPublisher(file.resolve("sink"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    protected List<ReceivedMessage> awaitReceived(int count, Duration timeout) {
        // Acked means already on disk: nothing to wait for.
        List<ReceivedMessage> received = new ArrayList<>();
        try (var files = Files.list(directory)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".log")).sorted().toList()) {
                for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
                    received.add(parse(line));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return received;
    }

    @Override
    protected OutboxEvent poisonOf(OutboxEvent event) {
        return event.withDestination("..");
    }

    @Test
    void theProviderIsFoundThroughServiceLoaderAndValidatesItsSetting() {
        MessagePublisherProvider provider = ServiceLoader.load(MessagePublisherProvider.class).stream()
                .map(ServiceLoader.Provider::get).filter(p -> p.name().equals("file-sink")).findFirst().orElseThrow();

        assertThatIllegalArgumentException().isThrownBy(() -> provider.create(Map.of()))
                .withMessageContaining("directory");
        try (MessagePublisher publisher = provider.create(Map.of("directory", directory.toString()))) {
            assertThat(publisher).isInstanceOf(FileSinkPublisher.class);
        }
    }

    private static ReceivedMessage parse(String line) {
        String[] fields = line.split("\t");
        Map<String, String> headers = new HashMap<>();
        for (int i = 5; i < fields.length; i++) {
            String[] header = fields[i].split(":", 2);
            headers.put(decode(header[0]), decode(header[1]));
        }
        return new ReceivedMessage(UUID.fromString(fields[0]), decode(fields[2]), decode(fields[3]),
                decode(fields[1]), Base64.getDecoder().decode(fields[4]), headers);
    }

    private static String decode(String base64) {
        return new String(Base64.getDecoder().decode(base64), StandardCharsets.UTF_8);
    }
}
