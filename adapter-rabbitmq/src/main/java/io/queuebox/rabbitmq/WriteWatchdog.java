package io.queuebox.rabbitmq;

import com.rabbitmq.client.SocketConfigurator;
import com.rabbitmq.client.SocketConfigurators;
import java.io.IOException;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Ends a write that the network blocked. The client writes frames on the publishing thread, with no timeout: on a
 * network that drops packets without a reset, once the socket's buffers are full a publish call waits until missed
 * heartbeats close the connection (about two of {@code heartbeat.seconds}), or for ever without heartbeats. Each call
 * arms this with its deadline and marks its stretches inside the client ({@link Watch#io()}); a call still inside the
 * client {@code grace} after its deadline, and not in a timed wait, has the connection's socket closed, which fails
 * the blocked write at once, and the client's recovery opens a new connection.
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
    // Closing can block (a TLS close notice queued behind another writer): never on the timer's thread.
    private final ExecutorService closer = Executors.newCachedThreadPool(runnable -> {
        Thread thread = new Thread(runnable, "queuebox-rabbitmq-socket-closer");
        thread.setDaemon(true);
        return thread;
    });
    private final Set<Socket> closing = ConcurrentHashMap.newKeySet();

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
     * Watches the calling thread's call, which must end by {@code deadlineNanos} ({@link System#nanoTime()}). Past it,
     * the connection's socket of that moment is closed only while the call is inside the client and not waiting with
     * a timeout (an RPC of a slow broker, whose own timeout ends it); otherwise it is looked at again a grace later.
     */
    Watch watch(long deadlineNanos) {
        CallWatch watch = new CallWatch(Thread.currentThread());
        return watch.schedule(deadlineNanos - System.nanoTime() + graceNanos) ? watch : NOTHING;
    }

    /** Watches waiting for their time, ended or not. */
    int pendingWatches() {
        return timer.getQueue().size();
    }

    @Override
    public void close() {
        timer.shutdownNow();
        closer.shutdown();
    }

    private final class CallWatch implements Watch, Runnable {
        private final Thread caller;
        private volatile boolean ended;
        // Changed by the caller only; read by the timer. Every entry and exit counts, so that a look can tell that the
        // call moved while it read the thread's state.
        private volatile int depth;
        private volatile long moves;
        // The exit counts before it leaves, so a look that read "inside" and no move saw the call still inside.
        private final Region region = () -> {
            moves++;
            depth--;
        };
        private volatile ScheduledFuture<?> next;

        CallWatch(Thread caller) {
            this.caller = caller;
        }

        @Override
        public Region io() {
            depth++;
            moves++;
            return region;
        }

        @Override
        public void run() {
            if (ended) {
                return;
            }
            Socket current = socket.get(); // the one a recovery made since the call began, if any
            if (current != null && !current.isClosed() && stuck()) {
                abandon(current);
            }
            schedule(graceNanos);
        }

        /** Inside the client, and there still after the state was read: a call that moved on is left alone. */
        private boolean stuck() {
            long before = moves;
            if (depth == 0) {
                return false;
            }
            Thread.State state = caller.getState();
            return moves == before && depth > 0 && !ended && stuckInClient(state);
        }

        boolean schedule(long delayNanos) {
            try {
                ScheduledFuture<?> scheduled = timer.schedule(this, delayNanos, TimeUnit.NANOSECONDS);
                next = scheduled;
                if (ended) {
                    scheduled.cancel(false); // ended while this looked: close() may have cancelled the look before
                }
                return true;
            } catch (RejectedExecutionException e) {
                return false; // closed with the publisher
            }
        }

        @Override
        public void close() {
            ended = true;
            ScheduledFuture<?> pending = next;
            if (pending != null) {
                pending.cancel(false);
            }
        }
    }

    /**
     * Inside the client, a thread blocked by the network writes in native code (RUNNABLE), or waits for the frame lock
     * another writer holds: a monitor (BLOCKED) or a {@code ReentrantLock} taken without a timeout (WAITING). A thread
     * waiting for an RPC's answer waits with the RPC timeout (TIMED_WAITING), which ends it.
     */
    private static boolean stuckInClient(Thread.State state) {
        return state == Thread.State.RUNNABLE || state == Thread.State.BLOCKED || state == Thread.State.WAITING;
    }

    /**
     * Closes the socket without a goodbye, off the timer's thread: with a linger of 0 a TLS socket does not first wait
     * to send its close notice, which would queue behind the blocked write; if it blocks still, only its own thread
     * waits, and the socket is not handed to another.
     */
    private void abandon(Socket socket) {
        if (!closing.add(socket)) {
            return;
        }
        try {
            closer.execute(() -> {
                try {
                    socket.setSoLinger(true, 0);
                } catch (IOException ignored) {
                    // closed already, or the option is refused: closing still fails the blocked write
                }
                try {
                    socket.close();
                } catch (IOException ignored) {
                    // closing is all that was asked
                } finally {
                    closing.remove(socket);
                }
            });
        } catch (RejectedExecutionException e) {
            closing.remove(socket); // closed with the publisher
        }
    }
}
