package io.queuebox.rabbitmq;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.impl.recovery.AutorecoveringChannel;
import java.io.IOException;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Confirm-mode channels, each used by one publish call at a time (a channel's publish sequence numbers and
 * listeners belong to one caller). At most {@code size} are in use; idle ones are reused.
 *
 * <p>Channels are closed on a thread of their own: closing waits for the broker's close-ok, and a broker that
 * stopped reading (a resource alarm) would hold a publish call for the whole RPC timeout.
 */
final class ChannelPool {

    private final Semaphore permits;
    private final BoundedRpcs rpcs;
    private final ConcurrentLinkedQueue<Channel> idle = new ConcurrentLinkedQueue<>();
    // Each pool channel's incarnation that this pool put in confirm mode. A recovery swaps the incarnation first and
    // selects confirms after: one handed out in between would publish outside confirm mode, numbered 0.
    private final Map<Channel, Channel> confirmed = new ConcurrentHashMap<>();
    private final ExecutorService closer = Executors.newSingleThreadExecutor(runnable -> {
        Thread thread = new Thread(runnable, "queuebox-rabbitmq-channel-closer");
        thread.setDaemon(true);
        return thread;
    });

    ChannelPool(int size, BoundedRpcs rpcs) {
        this.permits = new Semaphore(size, true);
        this.rpcs = rpcs;
    }

    /**
     * A channel in confirm mode, or null when none became free by {@code deadlineNanos} ({@link System#nanoTime()}).
     * A new one is opened off the calling thread, and waited for until the deadline at most: a channel that comes
     * later is closed, and its place given back, when it comes.
     *
     * @throws IOException when a new channel cannot be opened (the connection is down), or not by the deadline
     */
    Channel borrow(Connection connection, long deadlineNanos) throws IOException, InterruptedException {
        if (!permits.tryAcquire(Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS)) {
            return null;
        }
        for (Channel channel = idle.poll(); channel != null; channel = idle.poll()) {
            if (channel.isOpen() && confirmed.get(channel) == incarnation(channel)) {
                return channel;
            }
            discard(channel); // closed, or recovered since: a new one is opened rather than trusted
        }
        CompletableFuture<Channel> opening;
        try {
            opening = rpcs.start(() -> open(connection), 2); // channel.open, confirm.select
        } catch (RejectedExecutionException e) {
            permits.release();
            throw new IOException("the publisher is closed");
        } catch (RuntimeException | Error e) {
            permits.release(); // no thread for it (OutOfMemoryError), say
            throw e;
        }
        try {
            return BoundedRpcs.await(opening, deadlineNanos);
        } catch (TimeoutException | InterruptedException e) {
            opening.whenComplete((late, failure) -> {
                if (late != null) {
                    discard(late);
                }
                permits.release();
            });
            if (e instanceof InterruptedException interrupted) {
                throw interrupted;
            }
            throw new IOException("RabbitMQ opened no channel within the call's bound");
        } catch (IOException | RuntimeException | Error e) {
            permits.release();
            throw e;
        }
    }

    private Channel open(Connection connection) throws IOException {
        Channel channel = connection.createChannel();
        if (channel == null) {
            throw new IOException("the broker has no channel left (channel_max reached)");
        }
        try {
            Channel selected = incarnation(channel);
            channel.confirmSelect();
            if (incarnation(channel) != selected) {
                throw new IOException("the channel was recovered while it was opened");
            }
            confirmed.put(channel, selected);
            return channel;
        } catch (IOException | RuntimeException e) {
            discard(channel);
            throw e;
        }
    }

    /**
     * The incarnation of a borrowed channel that this pool put in confirm mode: a call publishes and listens on it
     * alone. An auto-recovering channel that its connection's recovery reopens starts its publish sequence again at
     * 1, and confirms of the closed one may still wait to be read: a call that went on publishing on the reopened
     * channel had those confirms settle its new messages (acked, never at the broker). Pinned, the call's publishes
     * after a loss fail unwritten, and its listeners hear this incarnation only.
     */
    Channel confirmedIncarnation(Channel borrowed) {
        return confirmed.get(borrowed); // recorded for every channel borrow hands out, until it is discarded
    }

    private static Channel incarnation(Channel channel) {
        return channel instanceof AutorecoveringChannel recovering ? recovering.getDelegate() : channel;
    }

    /** Gives the channel back; one that may still receive answers meant for the last call is not reused. */
    void release(Channel channel, boolean reusable) {
        if (reusable && channel.isOpen()) {
            idle.add(channel);
        } else {
            discard(channel);
        }
        permits.release();
    }

    /** Closes every idle channel and stops the closing thread; channels still to close go with their connection. */
    void closeAll() {
        for (Channel channel = idle.poll(); channel != null; channel = idle.poll()) {
            discard(channel);
        }
        closer.shutdown();
    }

    /**
     * Closes the channel soon, without waiting for the broker. A closed one is aborted too: an auto-recovering
     * connection keeps every channel not aborted, and would open it again, outside the pool, at each recovery.
     */
    void discard(Channel channel) {
        confirmed.remove(channel);
        try {
            closer.execute(() -> abort(channel));
        } catch (RejectedExecutionException e) {
            // Closing down: the connection's abort closes the channel with it.
        }
    }

    private static void abort(Channel channel) {
        try {
            channel.abort();
        } catch (IOException | RuntimeException e) {
            // Already closed with its connection: nothing left to release.
        }
    }
}
