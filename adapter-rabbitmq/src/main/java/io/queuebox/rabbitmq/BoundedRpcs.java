package io.queuebox.rabbitmq;

import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs the client's RPCs (channel open, confirm select, passive declare) off the publishing thread. Each RPC's own
 * timeout is the whole {@code confirm.timeout.ms}; a call that starts one late in its bound waits for it only as long
 * as it has left, and the RPC finishes, or times out, on its own thread. That thread is watched like a call
 * ({@link WriteWatchdog}), with the bound of its own RPCs, each of which may take the whole timeout: an RPC blocked
 * writing its frames, which would keep its channel's place or its exchange's probe for ever, gets the connection's
 * socket closed, and a slow one answered in time keeps the connection.
 */
final class BoundedRpcs implements AutoCloseable {

    /** One RPC, or a few in a row. */
    interface Rpc<T> {
        T call() throws IOException;
    }

    private final WriteWatchdog watchdog;
    private final long rpcTimeoutNanos;
    private final ExecutorService threads = Executors.newCachedThreadPool(runnable -> {
        Thread thread = new Thread(runnable, "queuebox-rabbitmq-rpc");
        thread.setDaemon(true);
        return thread;
    });

    /** {@code rpcTimeoutMs}: the client's timeout of one RPC. */
    BoundedRpcs(WriteWatchdog watchdog, long rpcTimeoutMs) {
        this.watchdog = watchdog;
        this.rpcTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(rpcTimeoutMs);
    }

    /**
     * Starts {@code rpc}, which makes {@code rpcsInARow} of the client's RPCs one after the other: it may take that
     * many RPC timeouts before its thread is taken for blocked. The calls waiting for it do not wait that long.
     *
     * @throws java.util.concurrent.RejectedExecutionException once closed
     */
    <T> CompletableFuture<T> start(Rpc<T> rpc, int rpcsInARow) {
        CompletableFuture<T> result = new CompletableFuture<>();
        threads.execute(() -> {
            long bound = System.nanoTime() + rpcsInARow * rpcTimeoutNanos;
            try (WriteWatchdog.Watch watch = watchdog.watch(bound); WriteWatchdog.Region io = watch.io()) {
                result.complete(rpc.call());
            } catch (IOException | RuntimeException | Error e) {
                result.completeExceptionally(e);
            }
        });
        return result;
    }

    /**
     * The RPC's answer, waited for until {@code deadlineNanos} ({@link System#nanoTime()}) at most.
     *
     * @throws TimeoutException when it has not answered by then; it goes on by itself
     */
    static <T> T await(CompletableFuture<T> rpc, long deadlineNanos)
            throws IOException, InterruptedException, TimeoutException {
        try {
            return rpc.get(Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof IOException io) {
                throw io;
            }
            if (cause instanceof RuntimeException runtime) {
                throw runtime;
            }
            if (cause instanceof Error error) {
                throw error;
            }
            throw new IOException(cause);
        }
    }

    @Override
    public void close() {
        threads.shutdown();
    }
}
