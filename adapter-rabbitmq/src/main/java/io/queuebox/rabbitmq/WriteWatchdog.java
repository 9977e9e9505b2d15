package io.queuebox.rabbitmq;

import com.rabbitmq.client.SocketConfigurator;
import com.rabbitmq.client.SocketConfigurators;
import java.io.IOException;
import java.net.Socket;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Ends a write that the network blocked. The client writes frames on the publishing thread, with no timeout: on a
 * network that drops packets without a reset, once the socket's buffers are full a publish call waits until missed
 * heartbeats close the connection (about two of {@code heartbeat.seconds}), or for ever without heartbeats. Each call
 * arms this with its deadline; a call still writing {@code grace} after it has its connection's socket closed, which
 * fails the blocked write at once, and the client's recovery opens a new connection.
 */
final class WriteWatchdog implements AutoCloseable {

    /** Ends one call's watch; ending it before the deadline (the usual case) closes nothing. */
    interface Watch extends AutoCloseable {
        /** Marks the call's client I/O (a frame written, an RPC) until the region is closed. */
        Region io();

        @Override
        void close();
    }

    /** A stretch of the call inside the client. */
    interface Region extends AutoCloseable {
        @Override
        void close();
    }

    private static final Region NO_REGION = () -> { };

    private static final Watch NOTHING = new Watch() {
        @Override
        public Region io() {
            return NO_REGION;
        }

        @Override
        public void close() {
        }
    };

    private final AtomicReference<Socket> socket = new AtomicReference<>();
    private final long graceNanos;
    private final ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1, runnable -> {
        Thread thread = new Thread(runnable, "queuebox-rabbitmq-write-watchdog");
        thread.setDaemon(true);
        return thread;
    });

    WriteWatchdog(long graceMs) {
        this.graceNanos = TimeUnit.MILLISECONDS.toNanos(graceMs);
        // One watch per publish call, almost all ended long before their time: leave none queued.
        timer.setRemoveOnCancelPolicy(true);
    }

    /** The client's default socket set-up, remembering each connection's socket (recovered ones too). */
    SocketConfigurator configurator() {
        return created -> {
            SocketConfigurators.defaultConfigurator().configure(created);
            socket.set(created);
        };
    }

    /**
     * Watches the calling thread's call, which must end by {@code deadlineNanos} ({@link System#nanoTime()}) on the
     * current connection. Past it, the socket is closed only while the thread is writing; a thread waiting for an
     * answer (an RPC of a slow broker, whose own timeout ends it) is looked at again a grace later.
     */
    Watch watch(long deadlineNanos) {
        Socket current = socket.get();
        if (current == null) {
            return NOTHING;
        }
        Thread caller = Thread.currentThread();
        AtomicBoolean ended = new AtomicBoolean();
        AtomicReference<ScheduledFuture<?>> next = new AtomicReference<>();
        Runnable look = new Runnable() {
            @Override
            public void run() {
                if (ended.get() || current.isClosed()) {
                    return;
                }
                if (writing(caller)) {
                    abandon(current);
                } else {
                    schedule(this, graceNanos, next);
                }
            }
        };
        if (!schedule(look, deadlineNanos - System.nanoTime() + graceNanos, next)) {
            return NOTHING; // closed with the publisher
        }
        return new Watch() {
            @Override
            public Region io() {
                return NO_REGION;
            }

            @Override
            public void close() {
                ended.set(true);
                ScheduledFuture<?> pending = next.get();
                if (pending != null) {
                    pending.cancel(false);
                }
            }
        };
    }

    private boolean schedule(Runnable look, long delayNanos, AtomicReference<ScheduledFuture<?>> next) {
        try {
            next.set(timer.schedule(look, delayNanos, TimeUnit.NANOSECONDS));
            return true;
        } catch (RejectedExecutionException e) {
            return false;
        }
    }

    /**
     * A thread blocked in a socket write runs native code (RUNNABLE) or waits for the stream another writer holds
     * (BLOCKED); one waiting for an RPC answer or a confirm parks (WAITING, TIMED_WAITING).
     */
    private static boolean writing(Thread thread) {
        Thread.State state = thread.getState();
        return state == Thread.State.RUNNABLE || state == Thread.State.BLOCKED;
    }

    /** Watches waiting for their time, ended or not. */
    int pendingWatches() {
        return timer.getQueue().size();
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }

    /**
     * Closes the socket without a goodbye: with a linger of 0 a TLS socket does not first wait to send its close
     * notice, which would queue behind the blocked write.
     */
    private static void abandon(Socket socket) {
        try {
            socket.setSoLinger(true, 0);
        } catch (IOException ignored) {
            // closed already, or the option is refused: closing still fails the blocked write
        }
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing is all that was asked
        }
    }
}
