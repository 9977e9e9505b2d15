package io.queuebox.rabbitmq;

import com.rabbitmq.client.SocketConfigurator;
import com.rabbitmq.client.SocketConfigurators;
import java.io.IOException;
import java.net.Socket;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Ends a write that the network blocked. The client writes frames on the publishing thread, with no timeout: on a
 * network that drops packets without a reset, once the socket's buffers are full a publish call waits until missed
 * heartbeats close the connection (about two of {@code heartbeat.seconds}), or for ever without heartbeats. Each call
 * arms this with its deadline; a call still running {@code grace} after it has its connection's socket closed, which
 * fails the blocked write at once, and the client's recovery opens a new connection.
 */
final class WriteWatchdog implements AutoCloseable {

    /** Ends one call's watch; ending it before the deadline (the usual case) closes nothing. */
    interface Watch extends AutoCloseable {
        @Override
        void close();
    }

    private static final Watch NOTHING = () -> { };

    private final AtomicReference<Socket> socket = new AtomicReference<>();
    private final long graceNanos;
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(runnable -> {
        Thread thread = new Thread(runnable, "queuebox-rabbitmq-write-watchdog");
        thread.setDaemon(true);
        return thread;
    });

    WriteWatchdog(long graceMs) {
        this.graceNanos = TimeUnit.MILLISECONDS.toNanos(graceMs);
    }

    /** The client's default socket set-up, remembering each connection's socket (recovered ones too). */
    SocketConfigurator configurator() {
        return created -> {
            SocketConfigurators.defaultConfigurator().configure(created);
            socket.set(created);
        };
    }

    /** Watches a call that must end by {@code deadlineNanos} ({@link System#nanoTime()}) on the current connection. */
    Watch watch(long deadlineNanos) {
        Socket current = socket.get();
        if (current == null) {
            return NOTHING;
        }
        AtomicBoolean ended = new AtomicBoolean();
        ScheduledFuture<?> check;
        try {
            check = timer.schedule(() -> {
                if (!ended.get() && !current.isClosed()) {
                    closeQuietly(current);
                }
            }, deadlineNanos - System.nanoTime() + graceNanos, TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) {
            return NOTHING; // closed with the publisher
        }
        return () -> {
            ended.set(true);
            check.cancel(false);
        };
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }

    private static void closeQuietly(Socket socket) {
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing is all that was asked
        }
    }
}
