package io.queuebox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import java.io.IOException;
import java.lang.reflect.Proxy;
import java.net.Socket;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.junit.jupiter.api.Test;

/**
 * 31bae4a arms an RPC thread's watch with the deadline of the call that started it, but the RPC legitimately outlives
 * that deadline by design: it is two RPCs in a row (channel open + confirm select; channel open + passive declare),
 * each bounded by confirm.timeout.ms from its own start. After deadline + grace every instant the RPC thread spends
 * outside TIMED_WAITING (writing its second frame, waiting for the connection's frame lock behind another writer:
 * a ReentrantLock in amqp-client 5.37, so WAITING) is read as "blocked" and the healthy connection's socket is closed.
 * A call's own write gets its remaining bound plus the grace; an RPC's second write, begun after deadline + grace,
 * gets nothing: here a 60 ms wait for the frame lock (less than a quarter of the grace) closes the socket.
 *
 * <p>Times are relative to t0; grace 250 ms, so the looks are at about deadline + 250, + 500, ... = t0 + 260, 510, ...
 */
class RpcWatchDeadlineReviewTest {

    private static final long GRACE_MS = 250;

    @Test
    void aLateChannelOpenOnASlowButHealthyBrokerKeepsItsConnection() throws Exception {
        try (WriteWatchdog watchdog = new WriteWatchdog(GRACE_MS); BoundedRpcs rpcs = new BoundedRpcs(watchdog, 1000);
             Socket socket = new Socket()) {
            watchdog.configurator().configure(socket); // the connection's socket
            ChannelPool pool = new ChannelPool(1, rpcs);
            ReentrantLock frameLock = new ReentrantLock(); // the client's _outputStreamLock
            long t0 = System.nanoTime();
            Thread writer = otherWriter(frameLock, t0, 450, 540); // a healthy 90 ms write of another call
            CompletableFuture<Void> selected = new CompletableFuture<>();
            Connection connection = connection(() -> {
                sleepUntil(t0, 480); // channel.open-ok after 480 ms: within the RPC timeout (1 s)
                return channel(() -> {
                    frameLock.lock(); // confirm.select frame: behind the other writer for 60 ms (t0+480..540)
                    frameLock.unlock();
                    sleepUntil(t0, 840); // confirm.select-ok after 300 ms: within its RPC timeout
                    selected.complete(null);
                });
            });

            // A call that got the only permit 10 ms before its deadline (it waited for it, as calls do under load).
            long deadline = t0 + TimeUnit.MILLISECONDS.toNanos(10);
            assertThatThrownBy(() -> pool.borrow(connection, deadline)).isInstanceOf(IOException.class);

            selected.get(3, TimeUnit.SECONDS);
            writer.join();
            Thread.sleep(100); // the closer thread
            assertThat(socket.isClosed())
                    .as("socket of a connection whose every frame was written and every RPC answered in time")
                    .isFalse();
        }
    }

    /**
     * The single-flight probe: caller A (deadline t0+10 ms) starts the passive declare, caller B (deadline t0+1200 ms)
     * joins it and gets its answer at t0+840, well within its own bound; the socket was closed at about t0+510 anyway,
     * because the probe was judged by A's deadline (31bae4a); now by its own two RPC timeouts. Same path as
     * exchangeExists/probeExchange, driven through BoundedRpcs.
     */
    @Test
    void aSharedProbeAnsweredWithinALaterCallersBoundKeepsItsConnection() throws Exception {
        try (WriteWatchdog watchdog = new WriteWatchdog(GRACE_MS); BoundedRpcs rpcs = new BoundedRpcs(watchdog, 1000);
             Socket socket = new Socket()) {
            watchdog.configurator().configure(socket);
            ReentrantLock frameLock = new ReentrantLock();
            long t0 = System.nanoTime();
            Thread writer = otherWriter(frameLock, t0, 450, 540);
            CompletableFuture<Boolean> probe = rpcs.start(() -> {
                sleepUntil(t0, 480);   // createChannel answered
                frameLock.lock();      // exchange.declare (passive) frame behind another writer
                frameLock.unlock();
                sleepUntil(t0, 840);   // declare-ok
                return true;
            }, 2); // createChannel, exchange.declare

            sleepUntil(t0, 200);
            long deadlineB = t0 + TimeUnit.MILLISECONDS.toNanos(1200);
            boolean exists = BoundedRpcs.await(probe, deadlineB); // caller B shares A's probe
            long answeredMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            writer.join();
            Thread.sleep(100);

            assertThat(exists).isTrue();
            assertThat(answeredMs).as("B's answer came within B's bound").isLessThan(1200);
            assertThat(socket.isClosed()).as("socket closed although the probe answered within B's bound (at %d ms)",
                    answeredMs).isFalse();
        }
    }

    private static Thread otherWriter(ReentrantLock frameLock, long t0, long fromMs, long toMs) {
        Thread writer = new Thread(() -> {
            sleepUntil(t0, fromMs);
            frameLock.lock();
            try {
                sleepUntil(t0, toMs);
            } finally {
                frameLock.unlock();
            }
        }, "test-other-writer");
        writer.start();
        return writer;
    }

    private static void sleepUntil(long t0, long ms) {
        long until = t0 + TimeUnit.MILLISECONDS.toNanos(ms);
        for (long left = until - System.nanoTime(); left > 0; left = until - System.nanoTime()) {
            try {
                TimeUnit.NANOSECONDS.sleep(left); // TIMED_WAITING, like the client's wait for an answer
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private static Connection connection(java.util.function.Supplier<Channel> createChannel) {
        return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "createChannel" -> createChannel.get();
                    case "isOpen" -> true;
                    case "hashCode" -> System.identityHashCode(proxy);
                    case "equals" -> proxy == args[0];
                    default -> throw new UnsupportedOperationException(method.getName());
                });
    }

    private static Channel channel(Runnable confirmSelect) {
        return (Channel) Proxy.newProxyInstance(Channel.class.getClassLoader(), new Class<?>[] {Channel.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "isOpen" -> true;
                    case "confirmSelect" -> {
                        confirmSelect.run();
                        yield null;
                    }
                    case "hashCode" -> System.identityHashCode(proxy);
                    case "equals" -> proxy == args[0];
                    default -> null;
                });
    }
}
