package io.queuebox.bench;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DeliverCallback;
import io.queuebox.kafka.KafkaMessagePublisher;
import io.queuebox.kafka.KafkaSettings;
import io.queuebox.ports.MessagePublisher;
import io.queuebox.rabbitmq.RabbitMqMessagePublisher;
import io.queuebox.rabbitmq.RabbitMqSettings;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.AppInfoParser;

/** The two brokers: relay publishers for them, and plain producers that measure what the broker alone can take. */
final class Brokers implements AutoCloseable {

    static final String EXCHANGE = "queuebox-bench";
    static final String QUEUE = "queuebox-bench";
    static final String TOPIC = "queuebox-bench";
    /** The exclusive queue a running bench holds (see {@link #open}). */
    static final String RUNNING = "queuebox-bench-running";

    private final String rabbitUri;
    private final Connection rabbit;
    private final String kafkaBootstrap;
    private final String kafkaDescription;
    private final AutoCloseable inProcessKafka;
    private org.apache.kafka.clients.admin.Admin kafkaAdmin;
    private Map<String, String> kafkaProducerOverrides = Map.of();

    private Brokers(String rabbitUri, Connection rabbit, String kafkaBootstrap, String kafkaDescription,
                    AutoCloseable inProcessKafka) {
        this.rabbitUri = rabbitUri;
        this.rabbit = rabbit;
        this.kafkaBootstrap = kafkaBootstrap;
        this.kafkaDescription = kafkaDescription;
        this.inProcessKafka = inProcessKafka;
    }

    /**
     * Connects to RabbitMQ (declaring a durable topic exchange and a durable queue bound to it) and, unless
     * Kafka is off, to the Kafka at {@code kafkaBootstrap} or to an in-process broker started here.
     */
    static Brokers open(String rabbitUri, boolean kafka, String kafkaBootstrap) throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(rabbitUri);
        Connection rabbit = factory.newConnection("queuebox-bench");
        try (Channel channel = rabbit.createChannel()) {
            // Two benches on one broker share the queue (and, as a rule, the database): each consumer would take
            // the other's messages. An exclusive queue, held while this connection lives, lets one run at a time.
            channel.queueDeclare(RUNNING, false, true, true, Map.of());
        } catch (java.io.IOException e) {
            rabbit.close();
            throw new IllegalStateException("another bench is running against this RabbitMQ (it holds the exclusive queue "
                    + RUNNING + "); running both would mix their messages and outbox rows", e);
        }
        try (Channel channel = rabbit.createChannel()) {
            channel.exchangeDeclare(EXCHANGE, "topic", true);
            channel.queueDeclare(QUEUE, true, false, false, Map.of());
            channel.queueBind(QUEUE, EXCHANGE, "#");
            channel.queuePurge(QUEUE);
        }
        if (!kafka) {
            return new Brokers(rabbitUri, rabbit, null, "not used", null);
        }
        if (kafkaBootstrap != null) {
            createTopic(kafkaBootstrap);
            return new Brokers(rabbitUri, rabbit, kafkaBootstrap, "external at " + kafkaBootstrap
                    + " (client " + AppInfoParser.getVersion() + ")", null);
        }
        Object started;
        try {
            Class<?> type = Class.forName("io.queuebox.kafka.testing.InProcessKafka");
            started = type.getMethod("startDedicated").invoke(null);
        } catch (ClassNotFoundException e) {
            rabbit.close();
            throw new IllegalStateException("no Kafka: the in-process broker's classes are not on the classpath"
                    + " (run bench/run.sh, or give --kafka-bootstrap, or --no-kafka)");
        }
        String bootstrap = (String) started.getClass().getMethod("bootstrap").invoke(started);
        createTopic(bootstrap);
        return new Brokers(rabbitUri, rabbit, bootstrap, AppInfoParser.getVersion() + " (in-process KRaft broker in the bench JVM)",
                (AutoCloseable) started);
    }

    /** The topic exists with its partitions led before the first measured send (auto-creation costs seconds). */
    private static void createTopic(String bootstrap) throws Exception {
        try (org.apache.kafka.clients.admin.Admin admin = org.apache.kafka.clients.admin.Admin.create(
                Map.of("bootstrap.servers", bootstrap))) {
            try {
                admin.createTopics(java.util.List.of(new org.apache.kafka.clients.admin.NewTopic(TOPIC, 3, (short) 1)))
                        .all().get(60, TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                if (!(e.getCause() instanceof org.apache.kafka.common.errors.TopicExistsException)) {
                    throw e;
                }
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (System.nanoTime() < deadline) {
                var description = admin.describeTopics(java.util.List.of(TOPIC)).allTopicNames().get(30, TimeUnit.SECONDS).get(TOPIC);
                if (description.partitions().stream().allMatch(p -> p.leader() != null && !p.leader().isEmpty())) {
                    return;
                }
                Thread.sleep(100);
            }
        }
    }

    boolean hasKafka() {
        return kafkaBootstrap != null;
    }

    String kafkaBootstrap() {
        return kafkaBootstrap;
    }

    String rabbitUri() {
        return rabbitUri;
    }

    String kafkaDescription() {
        return kafkaDescription;
    }

    String rabbitVersion() {
        Object version = rabbit.getServerProperties().get("version");
        return version == null ? "unknown" : version.toString();
    }

    MessagePublisher relayPublisher(String broker) {
        return switch (broker) {
            case "kafka" -> {
                KafkaSettings.Builder settings = KafkaSettings.builder().bootstrapServers(kafkaBootstrap).topic(TOPIC);
                kafkaProducerOverrides.forEach(settings::producerProperty);
                yield KafkaMessagePublisher.create(settings.build());
            }
            case "rabbitmq" -> RabbitMqMessagePublisher.create(rabbitSettings(rabbitUri));
            default -> throw new IllegalArgumentException("unknown broker " + broker);
        };
    }

    static RabbitMqSettings rabbitSettings(String uri) {
        return RabbitMqSettings.builder().uri(uri).exchange(EXCHANGE).build();
    }

    static MessagePublisher relayPublisher(String broker, String rabbitUri, String kafkaBootstrap) {
        return broker.equals("kafka")
                ? KafkaMessagePublisher.create(KafkaSettings.builder().bootstrapServers(kafkaBootstrap).topic(TOPIC).build())
                : RabbitMqMessagePublisher.create(rabbitSettings(rabbitUri));
    }

    /**
     * Kafka producer properties over the adapter's defaults, for the relay's publisher and for every plain producer
     * the bench compares it with (the broker ceilings, the peers), so that a tuning is measured against itself.
     */
    Brokers kafkaProducerOverrides(Map<String, String> overrides) {
        this.kafkaProducerOverrides = Map.copyOf(overrides);
        return this;
    }

    /** A channel on the bench's RabbitMQ connection, for the peers' own publishing; the caller closes it. */
    Channel newChannel() throws java.io.IOException {
        return rabbit.createChannel();
    }

    /** A producer with the Kafka adapter's producer defaults (idempotent, acks=all) and the bench's overrides. */
    KafkaProducer<String, byte[]> kafkaProducer() {
        Properties props = new Properties();
        KafkaSettings.PRODUCER_DEFAULTS.forEach(props::put);
        props.putAll(kafkaProducerOverrides);
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafkaBootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return new KafkaProducer<>(props);
    }

    /** The properties a peer publishes with: persistent, the event id as the message id (what the consumer keys on). */
    static AMQP.BasicProperties peerProperties(String eventId) {
        return new AMQP.BasicProperties.Builder().deliveryMode(2).messageId(eventId).type("BenchEvent")
                .contentType("application/json").build();
    }

    void purgeQueue() throws Exception {
        try (Channel channel = rabbit.createChannel()) {
            channel.queuePurge(QUEUE);
        }
    }

    /** Messages ready in the bench queue (published, not yet delivered to a consumer); -1 if RabbitMQ does not answer. */
    long queueDepth() {
        try (Channel channel = rabbit.createChannel()) {
            return channel.queueDeclarePassive(QUEUE).getMessageCount();
        } catch (Exception e) {
            return -1;
        }
    }

    /**
     * The broker side of a diagnostic: the bench queue's depth and RabbitMQ's alarms (memory, disk), the latter
     * from {@code rabbitmqctl} on this machine if it answers within 10 s.
     */
    String rabbitDiagnostic() {
        return "RabbitMQ queue ready=" + queueDepth() + ", alarms " + rabbitAlarms();
    }

    /**
     * {@code rabbitmqctl -q eval 'rabbit_alarm:get_alarms().'} ({@code []} when none), or why it gave no answer: the
     * command missing, failing or taking more than 10 s. Never throws.
     */
    static String rabbitAlarms() {
        java.nio.file.Path output = null;
        try {
            output = java.nio.file.Files.createTempFile("queuebox-bench-alarms-", ".txt");
            Process process = new ProcessBuilder("rabbitmqctl", "-q", "eval", "rabbit_alarm:get_alarms().")
                    .redirectErrorStream(true).redirectOutput(output.toFile()).start();
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                return "unknown (rabbitmqctl took more than 10 s)";
            }
            String text = java.nio.file.Files.readString(output).strip().replaceAll("\\s+", " ");
            return process.exitValue() == 0 ? text : "unknown (rabbitmqctl exit " + process.exitValue() + ": " + text + ")";
        } catch (Exception e) {
            return "unknown (" + e.getMessage() + ")";
        } finally {
            if (output != null) {
                output.toFile().delete();
            }
        }
    }

    /** Consumes the bench queue, calling back with the message id and headers; close the channel to stop. */
    Channel consume(java.util.function.BiConsumer<String, Map<String, Object>> onMessage) throws Exception {
        Channel channel = rabbit.createChannel();
        channel.basicQos(2000);
        DeliverCallback callback = (tag, delivery) -> onMessage.accept(delivery.getProperties().getMessageId(),
                delivery.getProperties().getHeaders());
        channel.basicConsume(QUEUE, true, callback, tag -> { });
        return channel;
    }

    /** The broker alone: the same messages, idempotent with acks=all, pipelined as far as the producer goes. */
    Run kafkaCeiling(int rows, int aggregates) throws Exception {
        try (KafkaProducer<String, byte[]> producer = kafkaProducer()) {
            producer.partitionsFor(TOPIC);
            Semaphore done = new Semaphore(0);
            AtomicReference<Exception> failure = new AtomicReference<>();
            Cpu cpu = Cpu.start();
            long start = System.nanoTime();
            for (int i = 1; i <= rows; i++) {
                RecordHeaders headers = new RecordHeaders();
                headers.add("bench", utf8("drain"));
                headers.add(KafkaMessagePublisher.HEADER_EVENT_ID, utf8(UUID.randomUUID().toString()));
                headers.add(KafkaMessagePublisher.HEADER_EVENT_TYPE, utf8("BenchEvent"));
                headers.add(KafkaMessagePublisher.HEADER_AGGREGATE_TYPE, utf8("order"));
                headers.add(KafkaMessagePublisher.HEADER_AGGREGATE_ID, utf8("agg-" + (i % aggregates)));
                headers.add(KafkaMessagePublisher.HEADER_CONTENT_TYPE, utf8("application/json"));
                producer.send(new ProducerRecord<>(TOPIC, null, "agg-" + (i % aggregates), payload(i), headers),
                        (metadata, e) -> {
                            if (e != null) {
                                failure.set(e);
                            }
                            done.release();
                        });
            }
            if (!done.tryAcquire(rows, 10, TimeUnit.MINUTES) || failure.get() != null) {
                throw new IllegalStateException("Kafka ceiling run failed", failure.get());
            }
            return Run.of(rows, seconds(start), cpu, null);
        }
    }

    /**
     * The broker alone: the same messages, persistent, mandatory, with publisher confirms, on as many channels as
     * the relay's RabbitMQ publisher uses by default (4), each streaming with a window of 1,000 unconfirmed.
     */
    Run rabbitCeiling(int rows, int aggregates) throws Exception {
        purgeQueue();
        int channels = 4;
        List<Thread> threads = new ArrayList<>();
        AtomicReference<Exception> failure = new AtomicReference<>();
        Cpu cpu = Cpu.start();
        long start = System.nanoTime();
        for (int c = 0; c < channels; c++) {
            int first = c;
            Thread thread = new Thread(() -> {
                try {
                    publishConfirmed(first, channels, rows, aggregates);
                } catch (Exception e) {
                    failure.compareAndSet(null, e);
                }
            }, "bench-rabbitmq-ceiling-" + c);
            threads.add(thread);
            thread.start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        Run run = Run.of(rows, seconds(start), cpu, null);
        if (failure.get() != null) {
            throw new IllegalStateException("RabbitMQ ceiling run failed", failure.get());
        }
        purgeQueue();
        return run;
    }

    private void publishConfirmed(int first, int stride, int rows, int aggregates) throws Exception {
        Channel channel = rabbit.createChannel();
        try {
            channel.confirmSelect();
            Semaphore window = new Semaphore(1000);
            java.util.concurrent.ConcurrentSkipListSet<Long> outstanding = new java.util.concurrent.ConcurrentSkipListSet<>();
            AtomicReference<String> failure = new AtomicReference<>();
            channel.addConfirmListener((tag, multiple) -> settle(outstanding, window, tag, multiple),
                    (tag, multiple) -> {
                        failure.set("nack " + tag);
                        settle(outstanding, window, tag, multiple);
                    });
            channel.addReturnListener(r -> failure.set("returned " + r.getReplyText()));
            for (int i = 1 + first; i <= rows; i += stride) {
                window.acquire();
                Map<String, Object> headers = new HashMap<>();
                headers.put("bench", "drain");
                headers.put(RabbitMqMessagePublisher.HEADER_AGGREGATE_TYPE, "order");
                headers.put(RabbitMqMessagePublisher.HEADER_AGGREGATE_ID, "agg-" + (i % aggregates));
                AMQP.BasicProperties props = new AMQP.BasicProperties.Builder().deliveryMode(2)
                        .messageId(UUID.randomUUID().toString()).type("BenchEvent").contentType("application/json")
                        .timestamp(new java.util.Date()).headers(headers).build();
                outstanding.add(channel.getNextPublishSeqNo());
                channel.basicPublish(EXCHANGE, "order.BenchEvent", true, props, payload(i));
            }
            if (!window.tryAcquire(1000, 10, TimeUnit.MINUTES) || failure.get() != null) {
                throw new IllegalStateException("RabbitMQ ceiling run failed: " + failure.get());
            }
        } finally {
            channel.close();
        }
    }

    private static void settle(java.util.concurrent.ConcurrentSkipListSet<Long> outstanding, Semaphore window, long tag,
                               boolean multiple) {
        if (multiple) {
            var head = outstanding.headSet(tag, true);
            int n = head.size();
            head.clear();
            window.release(n);
        } else if (outstanding.remove(tag)) {
            window.release();
        }
    }

    static byte[] payload(int n) {
        return ("{\"n\":" + n + ",\"pad\":\"" + "x".repeat(200) + "\"}").getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] utf8(String value) {
        return value.getBytes(StandardCharsets.UTF_8);
    }

    static double seconds(long startNanos) {
        return (System.nanoTime() - startNanos) / 1e9;
    }

    /**
     * What the broker holds for the bench so far: the messages ready in the RabbitMQ queue, or the sum of the
     * Kafka topic's end offsets. A drain reads it before and after (with no consumer on the queue in between), so
     * the difference is what the broker took in.
     */
    long held(String broker) throws Exception {
        if (broker.equals("rabbitmq")) {
            try (Channel channel = rabbit.createChannel()) {
                return channel.queueDeclarePassive(QUEUE).getMessageCount();
            }
        }
        if (kafkaAdmin == null) {
            kafkaAdmin = org.apache.kafka.clients.admin.Admin.create(Map.of("bootstrap.servers", kafkaBootstrap));
        }
        var topic = kafkaAdmin.describeTopics(List.of(TOPIC)).allTopicNames().get(30, TimeUnit.SECONDS).get(TOPIC);
        Map<org.apache.kafka.common.TopicPartition, org.apache.kafka.clients.admin.OffsetSpec> latest = new HashMap<>();
        topic.partitions().forEach(p -> latest.put(new org.apache.kafka.common.TopicPartition(TOPIC, p.partition()),
                org.apache.kafka.clients.admin.OffsetSpec.latest()));
        return kafkaAdmin.listOffsets(latest).all().get(30, TimeUnit.SECONDS).values().stream()
                .mapToLong(org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo::offset).sum();
    }

    @Override
    public void close() throws Exception {
        try {
            if (kafkaAdmin != null) {
                kafkaAdmin.close();
            }
            rabbit.close();
        } finally {
            if (inProcessKafka != null) {
                inProcessKafka.close();
            }
        }
    }
}
