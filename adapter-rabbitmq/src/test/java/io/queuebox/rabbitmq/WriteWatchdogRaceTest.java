package io.queuebox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * Interleavings of a watch's look ({@code CallWatch.run}) with the call it watches. The look reads {@code ended}, then
 * {@code depth}, then the caller's state, then reschedules; the caller can leave the client, and end the watch, between
 * any two of those reads. The tests force the interleaving by letting the caller move on at the moment the timer asks
 * for its state (the timer thread preempted between the reads on a busy two-core machine does the same).
 */
class WriteWatchdogRaceTest {

    /**
     * The call waits inside the client with a timeout (an RPC's answer) past its bound and grace; the answer comes just
     * as the watch looks (after it read depth 1, before it read the state); the call leaves the client, returns, and its
     * thread goes on with other work (RUNNABLE). The look then takes it for a blocked write and closes the healthy
     * connection, after the call has returned.
     */
    @Test
    void aCallThatLeavesTheClientAsItsWatchLooksKeepsItsConnection() throws Exception {
        try (WriteWatchdog watchdog = new WriteWatchdog(100); Peer peer = new Peer()) {
            Socket socket = peer.connect();
            watchdog.configurator().configure(socket);
            CountDownLatch answered = new CountDownLatch(1);
            CountDownLatch returned = new CountDownLatch(1);
            AtomicBoolean stop = new AtomicBoolean();
            HookedThread caller = new HookedThread(() -> {
                try (WriteWatchdog.Watch watch = watchdog.watch(System.nanoTime() + Duration.ofMillis(100).toNanos())) {
                    try (WriteWatchdog.Region io = watch.io()) {
                        answered.await(5, TimeUnit.SECONDS); // an RPC waiting for its answer, with its timeout
                    }
                } catch (InterruptedException e) {
                    return;
                }
                returned.countDown();
                while (!stop.get()) {
                    Thread.onSpinWait(); // the relay's next work, outside the client
                }
            });
            caller.onLook(() -> {
                answered.countDown();
                await(returned);
            });
            caller.start();

            assertThat(returned.await(5, TimeUnit.SECONDS)).as("the call returned").isTrue();
            Thread.sleep(300);
            stop.set(true);
            caller.join(5000);

            assertThat(socket.isClosed()).as("the healthy connection of a call that had returned").isFalse();
        }
    }

    /**
     * The call ends its watch while the watch is looking: the look reschedules itself after the call's close()
     * cancelled the task that was running, so a task of an ended watch stays queued for a grace (one per such race;
     * the promise of {@code endedWatchesLeaveNothingQueued}).
     */
    @Test
    void aWatchEndedWhileItLooksLeavesNothingQueued() throws Exception {
        try (WriteWatchdog watchdog = new WriteWatchdog(5_000); Peer peer = new Peer()) {
            Socket socket = peer.connect();
            watchdog.configurator().configure(socket);
            CountDownLatch answered = new CountDownLatch(1);
            CountDownLatch returned = new CountDownLatch(1);
            HookedThread caller = new HookedThread(() -> {
                // Its bound and grace over 200 ms from now (the first look), the next look a grace (5 s) later.
                try (WriteWatchdog.Watch watch = watchdog.watch(System.nanoTime() - Duration.ofMillis(4_800).toNanos())) {
                    try (WriteWatchdog.Region io = watch.io()) {
                        answered.await(5, TimeUnit.SECONDS);
                    }
                } catch (InterruptedException e) {
                    return;
                }
                returned.countDown();
                try {
                    Thread.sleep(2_000); // a timed wait: not taken for a blocked write, so nothing is closed
                } catch (InterruptedException ignored) {
                    // ends the test's caller
                }
            });
            caller.onLook(() -> {
                answered.countDown();
                await(returned);
                while (caller.getState() != Thread.State.TIMED_WAITING) {
                    Thread.onSpinWait();
                }
            });
            caller.start();

            assertThat(returned.await(5, TimeUnit.SECONDS)).as("the call returned").isTrue();
            Thread.sleep(200); // the look has finished
            int pending = watchdog.pendingWatches();
            caller.interrupt();
            caller.join(5000);

            assertThat(pending).as("tasks queued after every watch ended").isZero();
            assertThat(socket.isClosed()).isFalse();
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A caller whose state, asked by another thread (the watchdog's timer), first runs a hook once. */
    private static final class HookedThread extends Thread {
        private volatile Runnable onLook;

        HookedThread(Runnable body) {
            super(body, "test-call");
            setDaemon(true);
        }

        void onLook(Runnable hook) {
            this.onLook = hook;
        }

        @Override
        public State getState() {
            Runnable hook = onLook;
            if (hook != null && Thread.currentThread() != this) {
                onLook = null;
                hook.run();
            }
            return super.getState();
        }
    }

    /** A peer that accepts and never reads. */
    private static final class Peer implements AutoCloseable {
        private final ServerSocket server = new ServerSocket(0, 8, InetAddress.getLoopbackAddress());
        private Socket client;
        private Socket accepted;

        Peer() throws IOException {
        }

        Socket connect() throws IOException {
            client = new Socket();
            client.connect(server.getLocalSocketAddress());
            accepted = server.accept();
            return client;
        }

        @Override
        public void close() throws IOException {
            if (client != null) {
                client.close();
                accepted.close();
            }
            server.close();
        }
    }
}
