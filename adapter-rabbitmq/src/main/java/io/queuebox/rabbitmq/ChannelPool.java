package io.queuebox.rabbitmq;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import java.io.IOException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * Confirm-mode channels, each used by one publish call at a time (a channel's publish sequence numbers and
 * listeners belong to one caller). At most {@code size} are in use; idle ones are reused.
 *
 * <p>Channels are closed on a thread of their own: closing waits for the broker's close-ok, and a broker that
 * stopped reading (a resource alarm) would hold a publish call for the whole RPC timeout.
 */
final class ChannelPool {

    private final Semaphore permits;
    private final ConcurrentLinkedQueue<Channel> idle = new ConcurrentLinkedQueue<>();
    private final ExecutorService closer = Executors.newSingleThreadExecutor(runnable -> {
        Thread thread = new Thread(runnable, "queuebox-rabbitmq-channel-closer");
        thread.setDaemon(true);
        return thread;
    });

    ChannelPool(int size) {
        this.permits = new Semaphore(size, true);
    }

    /**
     * A channel in confirm mode, or null when none became free within the wait.
     *
     * @throws IOException when a new channel cannot be opened (the connection is down)
     */
    Channel borrow(Connection connection, long waitMs) throws IOException, InterruptedException {
        if (!permits.tryAcquire(waitMs, TimeUnit.MILLISECONDS)) {
            return null;
        }
        try {
            for (Channel channel = idle.poll(); channel != null; channel = idle.poll()) {
                if (channel.isOpen()) {
                    return channel;
                }
                discard(channel);
            }
            Channel channel = connection.createChannel();
            if (channel == null) {
                throw new IOException("the broker has no channel left (channel_max reached)");
            }
            channel.confirmSelect();
            return channel;
        } catch (IOException | RuntimeException e) {
            permits.release();
            throw e;
        }
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

    /** Closes the channel soon, without waiting for the broker. */
    void discard(Channel channel) {
        if (!channel.isOpen()) {
            return;
        }
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
