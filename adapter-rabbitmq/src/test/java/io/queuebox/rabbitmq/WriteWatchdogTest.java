package io.queuebox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class WriteWatchdogTest {

    /**
     * One watch per publish call, each ended long before its deadline: none may stay queued until its time (found by
     * review: with a cancelled task kept until its delay ran out, 3,000 calls with a 60 s confirm timeout left 3,000).
     */
    @Test
    void endedWatchesLeaveNothingQueued() throws Exception {
        try (WriteWatchdog watchdog = new WriteWatchdog(1000); Socket socket = new Socket()) {
            watchdog.configurator().configure(socket);
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();

            for (int i = 0; i < 1000; i++) {
                watchdog.watch(deadline).close();
            }
            WriteWatchdog.Watch open = watchdog.watch(deadline);

            assertThat(watchdog.pendingWatches()).as("the watch still open").isEqualTo(1);
            open.close();
            assertThat(watchdog.pendingWatches()).isZero();
            assertThat(socket.isClosed()).isFalse();
        }
    }

    /**
     * A TLS write the network blocked ({@code amqps://}): closing a TLS socket first sends a close notice, which queued
     * behind the blocked write, so the watchdog's own thread hung and the call with it (found by review: with heartbeats
     * off the call never returned). The peer here accepts and never reads.
     */
    @Test
    void aBlockedTlsWriteIsEndedSoonAfterTheDeadline(@TempDir Path keys) throws Exception {
        SSLContext tls = selfSignedContext(keys);
        try (WriteWatchdog watchdog = new WriteWatchdog(100);
             SSLServerSocket server = (SSLServerSocket) tls.getServerSocketFactory().createServerSocket(0, 1,
                     InetAddress.getLoopbackAddress())) {
            CompletableFuture<Socket> accepted = CompletableFuture.supplyAsync(() -> {
                try {
                    SSLSocket peer = (SSLSocket) server.accept();
                    peer.startHandshake();
                    return peer; // and never read
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
            SSLSocket client = (SSLSocket) tls.getSocketFactory().createSocket(InetAddress.getLoopbackAddress(),
                    server.getLocalPort());
            watchdog.configurator().configure(client);
            client.startHandshake();
            CompletableFuture<Throwable> writer = CompletableFuture.supplyAsync(() -> {
                try (WriteWatchdog.Watch watch = watchdog.watch(System.nanoTime() + Duration.ofMillis(300).toNanos());
                     WriteWatchdog.Region io = watch.io()) {
                    byte[] chunk = new byte[64 * 1024];
                    while (true) {
                        client.getOutputStream().write(chunk);
                    }
                } catch (IOException e) {
                    return e;
                }
            });

            Throwable ended = writer.get(5, TimeUnit.SECONDS);

            assertThat(ended).as("the blocked write failed").isInstanceOf(IOException.class);
            assertThat(closedSoon(client)).as("closed").isTrue();
            accepted.get(5, TimeUnit.SECONDS).close();
        }
    }

    /**
     * The call waits, without a timeout, for the client's frame lock (a {@code ReentrantLock}: the thread is WAITING, not
     * BLOCKED) while a writer the watchdog does not watch (the heartbeat sender, the channel closer) holds it, blocked in
     * its own write. Found by review: such a call was looked at again for ever.
     */
    @Test
    void aCallWaitingForTheFrameLockBehindAnUnwatchedWriterIsEnded() throws Exception {
        try (WriteWatchdog watchdog = new WriteWatchdog(100); StalledPeer peer = new StalledPeer()) {
            Socket socket = peer.connect();
            watchdog.configurator().configure(socket);
            ReentrantLock frameLock = new ReentrantLock();
            CountDownLatch held = new CountDownLatch(1);
            Future<Throwable> heartbeat = inThread("unwatched-writer", () -> {
                frameLock.lock();
                try {
                    held.countDown();
                    return writeUntilFailure(socket);
                } finally {
                    frameLock.unlock();
                }
            });
            assertThat(held.await(5, TimeUnit.SECONDS)).isTrue();

            Future<Throwable> call = inThread("call", () -> {
                try (WriteWatchdog.Watch watch = watchdog.watch(System.nanoTime() + Duration.ofMillis(200).toNanos());
                     WriteWatchdog.Region io = watch.io()) {
                    frameLock.lock();
                    try {
                        socket.getOutputStream().write(new byte[1]);
                        return null;
                    } finally {
                        frameLock.unlock();
                    }
                } catch (IOException e) {
                    return e;
                }
            });

            assertThat(call.get(5, TimeUnit.SECONDS)).as("the call ended by a failed write").isInstanceOf(IOException.class);
            assertThat(heartbeat.get(5, TimeUnit.SECONDS)).isInstanceOf(IOException.class);
            assertThat(closedSoon(socket)).as("closed").isTrue();
        }
    }

    /**
     * The connection was lost and recovered while the call waited; the call then blocked writing to the new socket.
     * Found by review: the watch kept the socket it was armed with, found it closed, and let the call block.
     */
    @Test
    void aCallThatWaitedThroughARecoveryIsEndedOnTheNewSocket() throws Exception {
        try (WriteWatchdog watchdog = new WriteWatchdog(100); StalledPeer first = new StalledPeer();
             StalledPeer second = new StalledPeer()) {
            Socket lost = first.connect();
            watchdog.configurator().configure(lost);
            CountDownLatch armed = new CountDownLatch(1);
            CountDownLatch recovered = new CountDownLatch(1);
            AtomicReference<Socket> fresh = new AtomicReference<>();
            Future<Throwable> call = inThread("call", () -> {
                try (WriteWatchdog.Watch watch = watchdog.watch(System.nanoTime() + Duration.ofMillis(300).toNanos())) {
                    armed.countDown();
                    recovered.await();
                    try (WriteWatchdog.Region io = watch.io()) {
                        return writeUntilFailure(fresh.get());
                    }
                }
            });
            assertThat(armed.await(5, TimeUnit.SECONDS)).isTrue();
            lost.close();
            fresh.set(second.connect());
            watchdog.configurator().configure(fresh.get());
            recovered.countDown();

            assertThat(call.get(5, TimeUnit.SECONDS)).as("the call ended by a failed write").isInstanceOf(IOException.class);
            assertThat(closedSoon(fresh.get())).as("closed").isTrue();
        }
    }

    /**
     * A call past its bound but busy on the CPU outside the client (a long GC pause, a loaded machine) is not blocked
     * by the network: its connection stays. Found by review: any RUNNABLE call past the grace had its healthy
     * connection closed, which costs duplicates and a recovery interval of not-attempted answers.
     */
    @Test
    void aCallBusyOutsideTheClientKeepsItsConnection() throws Exception {
        try (WriteWatchdog watchdog = new WriteWatchdog(100); StalledPeer peer = new StalledPeer()) {
            Socket socket = peer.connect();
            watchdog.configurator().configure(socket);

            Future<Throwable> call = inThread("call", () -> {
                try (WriteWatchdog.Watch watch = watchdog.watch(System.nanoTime() + Duration.ofMillis(100).toNanos())) {
                    long until = System.nanoTime() + Duration.ofMillis(1000).toNanos();
                    while (System.nanoTime() < until) {
                        Thread.onSpinWait();
                    }
                }
                return null;
            });

            assertThat(call.get(5, TimeUnit.SECONDS)).isNull();
            assertThat(socket.isClosed()).as("the busy call's connection").isFalse();
        }
    }

    /** A call inside the client waiting with a timeout (an RPC's answer) is ended by that timeout, not by a close. */
    @Test
    void aCallWaitingForAnAnswerWithItsOwnTimeoutKeepsItsConnection() throws Exception {
        try (WriteWatchdog watchdog = new WriteWatchdog(100); StalledPeer peer = new StalledPeer()) {
            Socket socket = peer.connect();
            watchdog.configurator().configure(socket);

            Future<Throwable> call = inThread("call", () -> {
                try (WriteWatchdog.Watch watch = watchdog.watch(System.nanoTime() + Duration.ofMillis(100).toNanos());
                     WriteWatchdog.Region io = watch.io()) {
                    Thread.sleep(800);
                }
                return null;
            });

            assertThat(call.get(5, TimeUnit.SECONDS)).isNull();
            assertThat(socket.isClosed()).as("the waiting call's connection").isFalse();
        }
    }

    /**
     * A close that blocks (a TLS socket sending its close notice behind another writer) must not hold up the watches of
     * other calls. Found by review: closes ran on the watchdog's one timer thread.
     */
    @Test
    void aCloseThatBlocksDoesNotHoldUpOtherCalls() throws Exception {
        CountDownLatch closing = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        try (WriteWatchdog watchdog = new WriteWatchdog(100); StalledPeer peer = new StalledPeer();
             Socket stuck = new Socket() {
                 @Override
                 public synchronized void close() throws IOException {
                     closing.countDown();
                     try {
                         release.await();
                     } catch (InterruptedException e) {
                         Thread.currentThread().interrupt();
                     }
                     super.close();
                 }
             }) {
            watchdog.configurator().configure(stuck);
            Future<Throwable> first = inThread("first-call", () -> {
                try (WriteWatchdog.Watch watch = watchdog.watch(System.nanoTime() + Duration.ofMillis(100).toNanos());
                     WriteWatchdog.Region io = watch.io()) {
                    while (closing.getCount() > 0) {
                        Thread.onSpinWait(); // "writing" until the watchdog closes its socket
                    }
                }
                return null;
            });
            assertThat(first.get(5, TimeUnit.SECONDS)).isNull();
            Socket socket = peer.connect();
            watchdog.configurator().configure(socket);

            Future<Throwable> second = inThread("second-call", () -> {
                try (WriteWatchdog.Watch watch = watchdog.watch(System.nanoTime() + Duration.ofMillis(200).toNanos());
                     WriteWatchdog.Region io = watch.io()) {
                    return writeUntilFailure(socket);
                }
            });

            try {
                assertThat(second.get(5, TimeUnit.SECONDS)).as("the second call ended by a failed write")
                        .isInstanceOf(IOException.class);
            } finally {
                release.countDown();
            }
        }
    }

    /** A peer that accepts connections and never reads from them, like a network that takes nothing more. */
    private static final class StalledPeer implements AutoCloseable {
        private final ServerSocket server = new ServerSocket(0, 8, InetAddress.getLoopbackAddress());
        private final List<Socket> sockets = new ArrayList<>();

        StalledPeer() throws IOException {
        }

        Socket connect() throws IOException {
            Socket client = new Socket();
            client.setSendBufferSize(16 * 1024);
            client.connect(server.getLocalSocketAddress());
            Socket accepted = server.accept();
            sockets.add(client);
            sockets.add(accepted);
            return client;
        }

        @Override
        public void close() throws IOException {
            for (Socket socket : sockets) {
                socket.close();
            }
            server.close();
        }
    }

    private static IOException writeUntilFailure(Socket socket) {
        byte[] chunk = new byte[64 * 1024];
        try {
            while (true) {
                socket.getOutputStream().write(chunk);
            }
        } catch (IOException e) {
            return e;
        }
    }

    /** The socket is closed on a thread of its own: the blocked write can fail a moment before the close returns. */
    private static boolean closedSoon(Socket socket) throws InterruptedException {
        long until = System.nanoTime() + Duration.ofSeconds(2).toNanos();
        while (!socket.isClosed() && System.nanoTime() < until) {
            Thread.sleep(10);
        }
        return socket.isClosed();
    }

    /** Each call on a thread of its own: they block, so a shared pool could serialise them. */
    private static Future<Throwable> inThread(String name, Callable<Throwable> body) {
        FutureTask<Throwable> task = new FutureTask<>(body);
        Thread thread = new Thread(task, "test-" + name);
        thread.setDaemon(true);
        thread.start();
        return task;
    }

    /** A context that presents and trusts one self-signed key pair, made with the JDK's keytool. */
    private static SSLContext selfSignedContext(Path dir) throws Exception {
        Path store = dir.resolve("peer.p12");
        Process keytool = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "keytool").toString(),
                "-genkeypair", "-alias", "peer", "-keyalg", "RSA", "-keysize", "2048", "-dname", "CN=localhost",
                "-validity", "2", "-storetype", "PKCS12", "-keystore", store.toString(), "-storepass", "changeit",
                "-keypass", "changeit").redirectErrorStream(true).start();
        String output = new String(keytool.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(keytool.waitFor(60, TimeUnit.SECONDS)).as("keytool ended").isTrue();
        assertThat(keytool.exitValue()).as(output).isZero();
        KeyStore keys = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(store)) {
            keys.load(in, "changeit".toCharArray());
        }
        KeyManagerFactory keyManagers = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        keyManagers.init(keys, "changeit".toCharArray());
        TrustManagerFactory trustManagers = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trustManagers.init(keys);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(keyManagers.getKeyManagers(), trustManagers.getTrustManagers(), null);
        return context;
    }
}
