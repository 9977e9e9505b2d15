package io.queuebox.testkit.faults;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A TCP proxy between a relay and a service that the suite can cut or slow down without closing a socket,
 * so that only the client's own timeouts can notice: {@link #cut()} stops forwarding in both directions (new
 * connections are accepted and then hang), {@link #delay} holds every chunk for a while before passing it on.
 */
public final class TcpProxy implements AutoCloseable {

    private final String targetHost;
    private final int targetPort;
    private final ServerSocket server;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final Object gate = new Object();
    private volatile boolean open = true;
    private volatile long delayNanos;
    private volatile boolean closed;
    private final java.util.concurrent.atomic.AtomicInteger generation = new java.util.concurrent.atomic.AtomicInteger();

    public TcpProxy(String targetHost, int targetPort) throws IOException {
        this.targetHost = targetHost;
        this.targetPort = targetPort;
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(this::accept, "proxy-accept-" + port());
        acceptor.setDaemon(true);
        acceptor.start();
    }

    public int port() {
        return server.getLocalPort();
    }

    /** Stops forwarding; every socket stays open, so the peers only see silence. */
    public void cut() {
        open = false;
    }

    /** Forwards again, including what arrived during the cut. */
    public void restore() {
        synchronized (gate) {
            open = true;
            gate.notifyAll();
        }
    }

    /**
     * Silences the connections open now, for good, while new ones are forwarded: what a client sees when
     * the server it talked to vanished without a word (a failover, a lost NAT or firewall entry).
     */
    public void cutExisting() {
        generation.incrementAndGet();
    }

    /** Holds every chunk {@code delay} before forwarding it, in order. */
    public void delay(Duration delay) {
        delayNanos = delay.toNanos();
    }

    private void accept() {
        while (!closed) {
            try {
                Socket client = server.accept();
                Socket upstream = new Socket(targetHost, targetPort);
                client.setTcpNoDelay(true);
                upstream.setTcpNoDelay(true);
                sockets.add(client);
                sockets.add(upstream);
                int born = generation.get();
                pump(client, upstream, "up", born);
                pump(upstream, client, "down", born);
            } catch (IOException e) {
                if (!closed) {
                    sleepQuietly(50);
                }
            }
        }
    }

    /** One reader that never stops reading and one writer that waits for the gate and the delay. */
    private void pump(Socket from, Socket to, String direction, int born) {
        LinkedBlockingQueue<Chunk> chunks = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> {
            byte[] buffer = new byte[16384];
            try (InputStream in = from.getInputStream()) {
                int n;
                while ((n = in.read(buffer)) >= 0) {
                    chunks.add(new Chunk(Arrays.copyOf(buffer, n), System.nanoTime()));
                }
            } catch (IOException ignored) {
                // the peer went away; the writer closes the other side
            }
            chunks.add(Chunk.END);
        }, "proxy-" + direction + "-read");
        Thread writer = new Thread(() -> {
            try (OutputStream out = to.getOutputStream()) {
                while (true) {
                    Chunk chunk = chunks.take();
                    if (chunk == Chunk.END) {
                        break;
                    }
                    awaitOpen(born);
                    long due = chunk.readAt + delayNanos;
                    long wait = due - System.nanoTime();
                    if (wait > 0) {
                        TimeUnit.NANOSECONDS.sleep(wait);
                    }
                    awaitOpen(born);
                    out.write(chunk.bytes);
                    out.flush();
                }
            } catch (IOException | InterruptedException ignored) {
                // closing below
            }
            closeQuietly(from);
            closeQuietly(to);
        }, "proxy-" + direction + "-write");
        reader.setDaemon(true);
        writer.setDaemon(true);
        reader.start();
        writer.start();
    }

    private void awaitOpen(int born) throws InterruptedException {
        synchronized (gate) {
            while ((!open || generation.get() != born) && !closed) {
                gate.wait(100);
            }
        }
    }

    @Override
    public void close() {
        closed = true;
        restore();
        closeQuietly(server);
        sockets.forEach(TcpProxy::closeQuietly);
    }

    private static void closeQuietly(AutoCloseable closeable) {
        try {
            closeable.close();
        } catch (Exception ignored) {
            // already closed
        }
    }

    private static void sleepQuietly(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private record Chunk(byte[] bytes, long readAt) {
        static final Chunk END = new Chunk(new byte[0], 0);
    }
}
