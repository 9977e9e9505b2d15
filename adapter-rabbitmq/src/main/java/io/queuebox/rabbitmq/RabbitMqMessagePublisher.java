package io.queuebox.rabbitmq;

import io.queuebox.ports.AggregateChains;
import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.AlreadyClosedException;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConfirmListener;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.Recoverable;
import com.rabbitmq.client.RecoveryListener;
import com.rabbitmq.client.ReturnListener;
import com.rabbitmq.client.ShutdownListener;
import com.rabbitmq.client.ShutdownSignalException;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Health;
import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.PublishOutcome;
import java.io.IOException;
import java.util.Arrays;
import java.util.Date;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Publishes outbox events to RabbitMQ as persistent messages with publisher confirms. Messages of
 * different aggregates are in flight together on one channel; the next message of an aggregate is
 * published only once the broker confirmed the previous one, so a failure (nack, return, lost connection)
 * stops its aggregate before anything later of it reaches the broker.
 *
 * <p>One call takes at most {@code confirm.timeout.ms}: waiting for a channel, the client's RPCs (their
 * timeout is set to the same bound) and the confirms. What was never published (no connection, no channel
 * free, the connection blocked by a resource alarm, the bound reached first) is answered
 * {@code NotAttempted}; only a published message whose confirm did not come is in doubt (retriable). The client's
 * socket writes have no timeout: a call that a network dropping packets blocked in one has its connection closed a
 * moment after its bound ({@link WriteWatchdog}), and the client recovers a new one.
 */
public final class RabbitMqMessagePublisher implements MessagePublisher {

    /** Header names QueueBox sets besides the AMQP properties (message id, type, content type, timestamp). */
    public static final String HEADER_AGGREGATE_TYPE = "aggregate-type";
    public static final String HEADER_AGGREGATE_ID = "aggregate-id";

    private final RabbitMqSettings settings;
    private final ChannelPool channels;
    private final Connector connector;
    private final WriteWatchdog watchdog;
    private final BoundedRpcs rpcs;
    // One passive declare at a time per exchange name, however many calls wait for its answer.
    private final Map<String, CompletableFuture<Boolean>> exchangeProbes = new ConcurrentHashMap<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Set<String> knownExchanges = ConcurrentHashMap.newKeySet();
    private volatile Connection connection;
    private volatile String lastConnectFailure;
    // Set by connection.blocked (a memory or disk alarm): the broker stops reading what the relay publishes.
    private volatile String blocked;
    // Set when a call ended at its bound without hearing anything from an open connection (a network that
    // drops packets without closing it, a stalled broker); cleared by the next confirm or a recovered connection.
    private volatile long silentSinceNanos;
    // Asks an open connection that went silent for an answer (a channel opened and closed, two RPCs) until it
    // gives one, so the silent state ends when the network does even if this relay publishes nothing more.
    private final java.util.concurrent.atomic.AtomicBoolean probing = new java.util.concurrent.atomic.AtomicBoolean();

    private RabbitMqMessagePublisher(RabbitMqSettings settings) {
        this.settings = settings;
        // A moment past the call's bound: enough that a call merely slow to return is not taken for a blocked one.
        this.watchdog = new WriteWatchdog(Math.min(1000, Math.max(250, settings.confirmTimeoutMs() / 10)));
        this.rpcs = new BoundedRpcs(watchdog, settings.confirmTimeoutMs());
        this.channels = new ChannelPool(settings.channels(), rpcs);
        this.connector = new Connector(this::open, settings.recoveryIntervalMs());
    }

    /**
     * A publisher for these settings. It connects on first use, so a broker that is down at start gives
     * "not attempted" outcomes rather than a failed start; once connected, the client reconnects by itself.
     */
    public static RabbitMqMessagePublisher create(RabbitMqSettings settings) {
        return new RabbitMqMessagePublisher(Objects.requireNonNull(settings, "settings"));
    }

    @Override
    public List<PublishOutcome> publish(List<ClaimedDelivery> batch) {
        if (closed.get()) {
            throw new IllegalStateException("the RabbitMQ publisher is closed");
        }
        List<ClaimedDelivery> deliveries = List.copyOf(batch);
        if (deliveries.isEmpty()) {
            return List.of();
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(settings.confirmTimeoutMs());
        String blockedBy = blocked;
        if (blockedBy != null) {
            // Whatever is published now waits unread on the socket until the alarm clears: send nothing.
            return allNotAttempted(deliveries, "RabbitMQ blocked the connection (" + blockedBy + ")");
        }
        Connection current;
        try {
            current = connection(deadline);
        } catch (IOException | InterruptedException | RuntimeException e) {
            return notAttemptedBeforePublishing(deliveries, e);
        }
        if (!current.isOpen()) {
            return allNotAttempted(deliveries, "RabbitMQ unavailable: connection lost, recovering automatically");
        }
        try (WriteWatchdog.Watch watch = watchdog.watch(deadline)) {
            return publishOn(current, deliveries, deadline, watch);
        }
    }

    /** Borrows a channel of {@code current} and runs the call on it; every write of it is under the watchdog. */
    private List<PublishOutcome> publishOn(Connection current, List<ClaimedDelivery> deliveries, long deadline,
                                           WriteWatchdog.Watch watch) {
        Channel channel;
        try {
            channel = channels.borrow(current, deadline);
        } catch (IOException | InterruptedException | RuntimeException e) {
            return notAttemptedBeforePublishing(deliveries, e);
        }
        if (channel == null) {
            return allNotAttempted(deliveries, "no channel free within " + settings.confirmTimeoutMs() + " ms");
        }
        Call call = new Call(deliveries, channels.confirmedIncarnation(channel), deadline, watch);
        boolean reusable = false;
        try {
            reusable = call.run();
        } finally {
            channels.release(channel, reusable);
        }
        return call.outcomes();
    }

    @Override
    public Health health() {
        String blockedBy = blocked;
        if (blockedBy != null) {
            return Health.down("blocked: " + blockedBy + " (the broker accepts nothing until the alarm clears)");
        }
        long silentSince = silentSinceNanos;
        Connection current = connection;
        if (silentSince != 0 && current != null && current.isOpen()) {
            return Health.down("no answer from RabbitMQ for " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - silentSince
                    + TimeUnit.MILLISECONDS.toNanos(settings.confirmTimeoutMs())) + " ms on an open connection"
                    + " (network silent or broker stalled; messages sent meanwhile are in doubt)");
        }
        if (current != null && current.isOpen()) {
            return Health.up("connected to " + current.getAddress() + ":" + current.getPort());
        }
        if (current != null) {
            return Health.down("connection lost, recovering automatically");
        }
        return lastConnectFailure == null ? Health.up("not connected yet")
                : Health.down("cannot connect: " + lastConnectFailure);
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            channels.closeAll();
            connector.close();
            watchdog.close();
            rpcs.close();
            Connection current = connection;
            if (current != null) {
                current.abort(5_000);
            }
        }
    }

    @Override
    public String toString() {
        return "RabbitMqMessagePublisher[" + settings + "]";
    }

    /** Starts the probe of a silent connection unless one runs; it ends when the connection answers or closes. */
    private void probeSilence() {
        if (!probing.compareAndSet(false, true)) {
            return;
        }
        Thread probe = new Thread(() -> {
            try {
                while (silentSinceNanos != 0 && !closed.get()) {
                    Connection current = connection;
                    if (current == null || !current.isOpen()) {
                        silentSinceNanos = 0; // closed: the health says so, and recovery takes over
                        break;
                    }
                    try {
                        Channel channel = current.createChannel(); // an RPC: answered only over a working network
                        if (channel != null) {
                            channel.close();
                        }
                        silentSinceNanos = 0;
                    } catch (IOException | TimeoutException | RuntimeException e) {
                        Thread.sleep(1000);
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                probing.set(false);
            }
        }, "queuebox-rabbitmq-silence-probe");
        probe.setDaemon(true);
        probe.start();
    }

    /** The connection, waiting for it at most until the call's deadline. */
    private Connection connection(long deadline) throws IOException, InterruptedException {
        Connection current = connection;
        return current != null ? current : connector.await(remainingMs(deadline));
    }

    /** One attempt, run by {@link Connector} off the calling thread. */
    private Connection open() throws IOException, TimeoutException {
        try {
            ConnectionFactory factory = settings.connectionFactory();
            factory.setSocketConfigurator(watchdog.configurator());
            Connection opened = factory.newConnection(settings.connectionName());
            opened.addBlockedListener(reason -> blocked = reason, () -> blocked = null);
            if (opened instanceof Recoverable recoverable) {
                // A new connection starts unblocked; the broker says so again if the alarm still holds.
                recoverable.addRecoveryListener(new RecoveryListener() {
                    @Override
                    public void handleRecovery(Recoverable recovered) {
                        blocked = null;
                        silentSinceNanos = 0;
                    }

                    @Override
                    public void handleRecoveryStarted(Recoverable recovering) {
                    }
                });
            }
            connection = opened;
            lastConnectFailure = null;
            return opened;
        } catch (TimeoutException | IOException e) {
            lastConnectFailure = describe(e);
            throw e;
        }
    }

    /**
     * Whether the exchange exists; checked once per name on a throw-away channel (a miss closes it), off the calling
     * thread, and waited for until the call's deadline at most. Any answer but "no such exchange" counts as yes:
     * publishing then says what is wrong.
     */
    private boolean exchangeExists(String exchange, long deadline) throws InterruptedException {
        if (exchange.isEmpty() || knownExchanges.contains(exchange)) {
            return true;
        }
        Connection current = connection;
        if (current == null) {
            return true; // not connected: publishing will say so
        }
        CompletableFuture<Boolean> probe;
        try {
            probe = exchangeProbes.computeIfAbsent(exchange, name -> rpcs.start(() -> probeExchange(current, name), 2));
        } catch (RejectedExecutionException e) {
            return true; // closed: publishing will say so
        }
        probe.whenComplete((exists, failure) -> exchangeProbes.remove(exchange, probe));
        try {
            return BoundedRpcs.await(probe, deadline);
        } catch (IOException | TimeoutException | RuntimeException | Error e) {
            return true; // down, or the bound is reached: nothing more is published in this call then
        }
    }

    private boolean probeExchange(Connection current, String exchange) throws IOException {
        Channel probe = current.createChannel();
        if (probe == null) {
            return true; // no channel left: publishing will say so
        }
        try {
            probe.exchangeDeclarePassive(exchange);
            knownExchanges.add(exchange);
            return true;
        } catch (IOException e) {
            if (e.getCause() instanceof ShutdownSignalException signal && replyCode(signal) == 404) {
                return false;
            }
            throw e;
        } finally {
            channels.discard(probe);
        }
    }

    private static int replyCode(ShutdownSignalException signal) {
        return signal.getReason() instanceof AMQP.Channel.Close close ? close.getReplyCode() : -1;
    }

    /** The batch answered when no connection or channel could be had for it: nothing of it was published. */
    private static List<PublishOutcome> notAttemptedBeforePublishing(List<ClaimedDelivery> deliveries, Exception cause) {
        if (cause instanceof InterruptedException) {
            Thread.currentThread().interrupt();
            return allNotAttempted(deliveries, "interrupted before publishing");
        }
        return allNotAttempted(deliveries, "RabbitMQ unavailable: " + describe(cause));
    }

    private static List<PublishOutcome> allNotAttempted(List<ClaimedDelivery> deliveries, String reason) {
        return deliveries.stream().map(d -> PublishOutcome.notAttempted(d.eventId(), "not attempted: " + reason))
                .toList();
    }

    private static long remainingMs(long deadline) {
        return Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
    }

    private static String describe(Throwable e) {
        Throwable cause = e.getCause() != null && e.getMessage() == null ? e.getCause() : e;
        return cause.getClass().getSimpleName() + (cause.getMessage() == null ? "" : ": " + cause.getMessage());
    }

    private sealed interface Signal {
    }

    private record Confirm(long seq, boolean multiple, boolean ack) implements Signal {
    }

    private record Returned(String messageId, String replyText) implements Signal {
    }

    private record Closed(String reason) implements Signal {
    }

    /** One publish call on one channel: its chains, the unconfirmed messages and what the broker said. */
    private final class Call {
        private final List<ClaimedDelivery> batch;
        private final Channel channel;
        private final long deadline;
        private final WriteWatchdog.Watch watch;
        private final PublishOutcome[] outcomes;
        private final List<Deque<Integer>> chains;
        private final int[] chainOf;
        private final TreeMap<Long, Integer> unconfirmed = new TreeMap<>();
        private final Map<String, Integer> byMessageId = new HashMap<>();
        private final Map<Integer, String> returned = new HashMap<>();
        private final Set<String> missingExchanges = new HashSet<>();
        private final BlockingQueue<Signal> signals = new LinkedBlockingQueue<>();
        // Why nothing more is published in this call; what was published and not confirmed is in doubt.
        private String stopped;
        private boolean channelLost;

        Call(List<ClaimedDelivery> batch, Channel channel, long deadline, WriteWatchdog.Watch watch) {
            this.batch = batch;
            this.channel = channel;
            this.deadline = deadline;
            this.watch = watch;
            this.outcomes = new PublishOutcome[batch.size()];
            this.chains = AggregateChains.of(batch);
            this.chainOf = new int[batch.size()];
            for (int c = 0; c < chains.size(); c++) {
                for (int index : chains.get(c)) {
                    chainOf[index] = c;
                }
            }
        }

        /** Runs the call; answers whether the channel can serve another call. */
        boolean run() {
            for (ClaimedDelivery delivery : batch) {
                String exchange = exchangeFor(delivery.event());
                if (System.nanoTime() >= deadline) {
                    break; // the passive declares took the whole bound: nothing is published
                }
                try {
                    if (!missingExchanges.contains(exchange) && !exchangeExists(exchange, deadline)) {
                        missingExchanges.add(exchange);
                    }
                } catch (InterruptedException e) {
                    // Nothing is published after an interrupt: the whole batch is answered not attempted.
                    Thread.currentThread().interrupt();
                    stopped = "interrupted before publishing";
                    break;
                }
            }
            ConfirmListener confirms = channel.addConfirmListener(
                    (seq, multiple) -> signals.add(new Confirm(seq, multiple, true)),
                    (seq, multiple) -> signals.add(new Confirm(seq, multiple, false)));
            ReturnListener returns = channel.addReturnListener(r -> signals.add(
                    new Returned(r.getProperties().getMessageId(), r.getReplyCode() + " " + r.getReplyText())));
            ShutdownListener shutdown = cause -> signals.add(new Closed(describe(cause)));
            channel.addShutdownListener(shutdown);
            try {
                return await();
            } finally {
                channel.removeConfirmListener(confirms);
                channel.removeReturnListener(returns);
                channel.removeShutdownListener(shutdown);
            }
        }

        List<PublishOutcome> outcomes() {
            return Arrays.asList(outcomes);
        }

        private boolean await() {
            boolean heard = false;
            for (int chain = 0; chain < chains.size(); chain++) {
                publishNext(chain);
            }
            try {
                while (!unconfirmed.isEmpty() && !channelLost) {
                    long remaining = deadline - System.nanoTime();
                    Signal signal = remaining > 0 ? signals.poll(remaining, TimeUnit.NANOSECONDS) : null;
                    if (signal == null) {
                        break;
                    }
                    heard = true;
                    if (signal instanceof Returned r) {
                        Integer index = byMessageId.get(r.messageId());
                        if (index != null) {
                            returned.put(index, r.replyText());
                        }
                    } else if (signal instanceof Confirm c) {
                        confirm(c);
                    } else if (signal instanceof Closed closedSignal) {
                        knownExchanges.clear();
                        lose("channel closed before the confirm: " + closedSignal.reason());
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                stopped = "interrupted while waiting for confirms";
            }
            boolean complete = unconfirmed.isEmpty() && !channelLost;
            if (heard) {
                silentSinceNanos = 0;
            } else if (!unconfirmed.isEmpty() && !channelLost && silentSinceNanos == 0) {
                silentSinceNanos = System.nanoTime();
                probeSilence();
            }
            for (int index : unconfirmed.values()) {
                // Published, no confirm yet: the broker may or may not have it (and may confirm it late).
                outcomes[index] = PublishOutcome.retriable(batch.get(index).eventId(), stopped != null ? stopped
                        : "no confirm from RabbitMQ within " + settings.confirmTimeoutMs() + " ms");
            }
            for (int i = 0; i < outcomes.length; i++) {
                if (outcomes[i] == null) {
                    outcomes[i] = PublishOutcome.notAttempted(batch.get(i).eventId(), "not attempted: " + (stopped != null
                            ? stopped : "confirm.timeout.ms (" + settings.confirmTimeoutMs() + " ms) passed before it was published"));
                }
            }
            // A channel with confirms still due would hand them to the next call: not reused.
            return complete;
        }

        private void confirm(Confirm confirm) {
            Map<Long, Integer> settled = confirm.multiple()
                    ? new TreeMap<>(unconfirmed.headMap(confirm.seq(), true))
                    : unconfirmed.containsKey(confirm.seq()) ? Map.of(confirm.seq(), unconfirmed.get(confirm.seq()))
                    : Map.of();
            for (Map.Entry<Long, Integer> entry : settled.entrySet()) {
                unconfirmed.remove(entry.getKey());
                int index = entry.getValue();
                UUID eventId = batch.get(index).eventId();
                String returnedReason = returned.get(index);
                if (!confirm.ack()) {
                    outcomes[index] = PublishOutcome.retriable(eventId, "nacked by RabbitMQ");
                    failRest(chainOf[index]);
                } else if (returnedReason != null) {
                    String reason = "unroutable: returned by RabbitMQ (" + returnedReason + ")";
                    outcomes[index] = settings.unroutablePermanent()
                            ? PublishOutcome.permanent(eventId, reason) : PublishOutcome.retriable(eventId, reason);
                    failRest(chainOf[index]);
                } else {
                    outcomes[index] = PublishOutcome.acked(eventId);
                    publishNext(chainOf[index]);
                }
            }
        }

        private void publishNext(int chain) {
            Integer index = chains.get(chain).peek();
            if (index == null || stopped != null) {
                return; // answered "not attempted" at the end
            }
            String blockedBy = blocked;
            if (blockedBy != null) {
                stopped = "RabbitMQ blocked the connection (" + blockedBy + ")";
                return;
            }
            if (System.nanoTime() >= deadline) {
                return;
            }
            chains.get(chain).poll();
            OutboxEvent event = batch.get(index).event();
            String exchange = exchangeFor(event);
            if (missingExchanges.contains(exchange)) {
                outcomes[index] = PublishOutcome.permanent(event.eventId(),
                        "no such destination: exchange '" + exchange + "' does not exist (404 NOT_FOUND)");
                failRest(chain);
                return;
            }
            long seq = channel.getNextPublishSeqNo();
            try (WriteWatchdog.Region io = watch.io()) {
                channel.basicPublish(exchange, routingKeyFor(event), settings.mandatory(),
                        properties(batch.get(index)), event.payload());
                unconfirmed.put(seq, index);
                byMessageId.put(event.eventId().toString(), index);
            } catch (AlreadyClosedException e) {
                // Refused before anything was written: never reached the broker.
                outcomes[index] = PublishOutcome.notAttempted(event.eventId(), "not attempted: RabbitMQ unavailable: "
                        + describe(e));
                failRest(chain);
                lose("RabbitMQ unavailable: " + describe(e));
            } catch (IOException e) {
                // The frame may be partly on the wire: in doubt.
                outcomes[index] = PublishOutcome.retriable(event.eventId(), "RabbitMQ unavailable: " + describe(e));
                failRest(chain);
                lose("RabbitMQ unavailable: " + describe(e));
            }
        }

        /** The channel is gone: nothing more is published, and every unconfirmed message is in doubt. */
        private void lose(String reason) {
            channelLost = true;
            if (stopped == null) {
                stopped = reason;
            }
        }

        private void failRest(int chain) {
            Deque<Integer> rest = chains.get(chain);
            for (Integer later = rest.poll(); later != null; later = rest.poll()) {
                outcomes[later] = PublishOutcome.notAttempted(batch.get(later).eventId(),
                        "not attempted: an earlier event of aggregate " + batch.get(later).aggregate() + " failed");
            }
        }

        private String exchangeFor(OutboxEvent event) {
            return event.destinationOverride().orElseGet(() -> settings.exchangeTemplate().render(event));
        }

        private String routingKeyFor(OutboxEvent event) {
            return settings.routingKeyTemplate().render(event);
        }

        private AMQP.BasicProperties properties(ClaimedDelivery delivery) {
            OutboxEvent event = delivery.event();
            Map<String, Object> headers = new HashMap<>(event.headers());
            headers.put(HEADER_AGGREGATE_TYPE, event.aggregateType());
            headers.put(HEADER_AGGREGATE_ID, event.aggregateId());
            return new AMQP.BasicProperties.Builder()
                    .deliveryMode(2)
                    .messageId(event.eventId().toString())
                    .type(event.eventType())
                    .contentType(event.contentType())
                    .timestamp(Date.from(delivery.createdAt()))
                    .appId("queuebox")
                    .headers(headers)
                    .build();
        }
    }
}
