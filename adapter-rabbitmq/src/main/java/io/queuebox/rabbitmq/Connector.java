package io.queuebox.rabbitmq;

import com.rabbitmq.client.Connection;
import java.io.IOException;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Opens the connection on a thread of its own. {@code newConnection} is governed by {@code connection.timeout.ms}
 * (TCP connect, then the AMQP handshake), not by a publish call's bound: a broker that accepts and never speaks
 * would hold the caller, and every caller queued behind it, that long. Here a call waits only its own remaining
 * time; the attempt carries on, and the calls after it wait for the same attempt instead of starting another.
 */
final class Connector {

    private final Callable<Connection> open;
    private final long retryAfterNanos;
    private CompletableFuture<Connection> attempt;
    private long nextAttempt = System.nanoTime();
    private boolean closed;

    /** {@code open} makes one attempt; after a failed one the next starts no sooner than {@code retryAfterMs}. */
    Connector(Callable<Connection> open, long retryAfterMs) {
        this.open = open;
        this.retryAfterNanos = TimeUnit.MILLISECONDS.toNanos(retryAfterMs);
    }

    /**
     * The connection, once the attempt in progress (or a new one) ends within {@code waitMs}.
     *
     * @throws IOException when the attempt failed, is not over in time, or failed too recently to try again
     */
    Connection await(long waitMs) throws IOException, InterruptedException {
        CompletableFuture<Connection> current = current();
        try {
            return current.get(waitMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new IOException("not connected within the call's bound (connecting carries on)");
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            throw cause instanceof IOException io ? io : new IOException(cause);
        }
    }

    /** Aborts a connection that an attempt still in progress opens after all. */
    synchronized void close() {
        closed = true;
        if (attempt != null) {
            attempt.thenAccept(connection -> connection.abort(1_000));
        }
    }

    private synchronized CompletableFuture<Connection> current() {
        if (attempt != null && (!attempt.isDone() || !attempt.isCompletedExceptionally())) {
            return attempt; // in progress, or connected (the client recovers that connection by itself)
        }
        if (closed) {
            return CompletableFuture.failedFuture(new IOException("the RabbitMQ publisher is closed"));
        }
        if (attempt != null && System.nanoTime() < nextAttempt) {
            return attempt; // failed a moment ago: its failure answers until the retry interval is over
        }
        CompletableFuture<Connection> started = new CompletableFuture<>();
        Thread thread = new Thread(() -> {
            try {
                started.complete(open.call());
            } catch (Exception e) {
                synchronized (this) {
                    nextAttempt = System.nanoTime() + retryAfterNanos;
                }
                started.completeExceptionally(e instanceof TimeoutException
                        ? new IOException("connection timed out", e) : e);
            }
        }, "queuebox-rabbitmq-connect");
        thread.setDaemon(true);
        attempt = started;
        thread.start();
        return started;
    }
}
