package io.queuebox.example.filesink;

import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Health;
import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Pattern;

/**
 * The worked example of docs/how-to/custom-broker-adapter.md: a "broker" that appends every message as one
 * line to {@code <directory>/<destination>.log} and forces it to disk before acking. The destination is the
 * event's override, else its aggregate type.
 */
public final class FileSinkPublisher implements MessagePublisher {

    private static final Pattern SAFE_NAME = Pattern.compile("[A-Za-z0-9._-]{1,100}");
    private static final Base64.Encoder BASE64 = Base64.getEncoder();

    private final Path directory;
    private final AtomicBoolean closed = new AtomicBoolean();

    public FileSinkPublisher(Path directory) {
        this.directory = directory;
    }

    @Override
    public List<PublishOutcome> publish(List<ClaimedDelivery> batch) {
        if (closed.get()) {
            throw new IllegalStateException("the file sink is closed");
        }
        List<PublishOutcome> outcomes = new ArrayList<>(batch.size());
        Set<Object> failedAggregates = new HashSet<>();
        for (ClaimedDelivery delivery : batch) {
            // Rule 3 of the contract: after a failure, later messages of the aggregate are not attempted.
            if (failedAggregates.contains(delivery.aggregate())) {
                outcomes.add(PublishOutcome.notAttempted(delivery.eventId(),
                        "not attempted: an earlier event of " + delivery.aggregate() + " failed"));
                continue;
            }
            PublishOutcome outcome = write(delivery.event());
            if (!outcome.isAcked()) {
                failedAggregates.add(delivery.aggregate());
            }
            outcomes.add(outcome);
        }
        return outcomes;
    }

    private PublishOutcome write(OutboxEvent event) {
        String destination = event.destinationOverride().orElse(event.aggregateType());
        if (!SAFE_NAME.matcher(destination).matches() || destination.startsWith(".")) {
            // Sending it again cannot help: the name stays illegal.
            return PublishOutcome.permanent(event.eventId(), "illegal destination name '" + destination + "'");
        }
        FileChannel file;
        try {
            Files.createDirectories(directory);
            file = FileChannel.open(directory.resolve(destination + ".log"),
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND, StandardOpenOption.WRITE);
        } catch (IOException e) {
            // Nothing was written: not charged an attempt, like a broker that cannot be reached.
            return PublishOutcome.notAttempted(event.eventId(), e.getClass().getSimpleName() + ": " + e.getMessage());
        }
        try (file) {
            // One lock per JVM is enough for an example; appends of concurrent workers must not interleave.
            synchronized (FileSinkPublisher.class) {
                file.write(ByteBuffer.wrap(line(event).getBytes(StandardCharsets.UTF_8)));
                file.force(true); // acked means durable
            }
            return PublishOutcome.acked(event.eventId());
        } catch (IOException e) {
            // Part of the line may be on disk: in doubt, so retriable (the disk may come back), never thrown.
            return PublishOutcome.retriable(event.eventId(), e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }

    /** eventId, aggregateType, aggregateId, eventType, payload, then name:value headers, tab separated, Base64. */
    static String line(OutboxEvent event) {
        StringBuilder line = new StringBuilder()
                .append(event.eventId()).append('\t')
                .append(encode(event.aggregateType())).append('\t')
                .append(encode(event.aggregateId())).append('\t')
                .append(encode(event.eventType())).append('\t')
                .append(BASE64.encodeToString(event.payload()));
        for (Map.Entry<String, String> header : event.headers().entrySet()) {
            line.append('\t').append(encode(header.getKey())).append(':').append(encode(header.getValue()));
        }
        return line.append('\n').toString();
    }

    private static String encode(String text) {
        return BASE64.encodeToString(text.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public Health health() {
        return Files.isWritable(directory) || !Files.exists(directory)
                ? Health.up("writing to " + directory) : Health.down("cannot write to " + directory);
    }

    @Override
    public void close() {
        closed.set(true);
    }
}
