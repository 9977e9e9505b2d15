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
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

/**
 * A TCP proxy between a relay and a service that the suite can cut or slow down without closing a socket,
 * so that only the client's own timeouts can notice: {@link #cut()} stops forwarding in both directions (new
 * connections are accepted and then hang), {@link #delay} holds every chunk for a while before passing it on,
 * {@link #freezeClientAfter} stops reading what the service sends, as a client that froze would, {@link #jamClient}
 * stops reading what the client sends, as a network dropping packets would,
 * {@link #stallClientAfterMessage} passes what the client sends up to the end of one PostgreSQL message and holds
 * the rest, as a network that lost the rest of a statement would.
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
    /** Bytes of the service's sending still let through before it is no longer read; negative: no limit. */
    private final AtomicLong downstreamAllowance = new AtomicLong(-1);
    /** Whether what the client sends is no longer read ({@link #jamClient}). */
    private volatile boolean clientJammed;
    private final AtomicInteger generation = new AtomicInteger();
    /** Advanced by {@link #jamExisting}: a connection born under an older one drops what its client sends. */
    private final AtomicInteger jamGeneration = new AtomicInteger();
    /** Armed by {@link #stallClientAfterMessage}: the first connection the client then sends on takes it. */
    private final AtomicReference<MessageStall> armedStall =
            new AtomicReference<>();
    private volatile boolean stalled;

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

    /** Forwards again, including what arrived during the cut, and reads the service again after a freeze. */
    public void restore() {
        synchronized (gate) {
            open = true;
            downstreamAllowance.set(-1);
            clientJammed = false;
            armedStall.set(null);
            stalled = false;
            gate.notifyAll();
        }
    }

    /**
     * Lets {@code bytes} more bytes of what the service sends through, then stops reading from it, as a client
     * process that froze (SIGSTOP) in the middle of a result would: what the service sends after that fills the
     * socket buffers, its writes block and its kernel sees a zero window, while the client's kernel keeps
     * answering. What the client sends still passes. {@link #restore()} reads again.
     */
    public void freezeClientAfter(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("bytes must not be negative: " + bytes);
        }
        downstreamAllowance.set(bytes);
    }

    /**
     * Stops reading what the client sends, as a network that drops its packets without a reset does: the client's
     * socket buffers fill and its writes block, with nothing to tell it why. {@link #restore()} reads again.
     */
    public void jamClient() {
        clientJammed = true;
    }

    /**
     * Passes what the client sends next up to the end of its next PostgreSQL frontend message of {@code type} (a
     * type byte, then a 4-byte length that counts itself), then holds everything after it, as a network that carried
     * the first part of a statement and lost the rest would: with the extended protocol, a Parse ({@code 'P'})
     * without the Sync that follows it leaves the server's session active, waiting for the client. Arm it while the
     * client is between statements of a connection already open; {@link #restore()} passes the rest.
     */
    public void stallClientAfterMessage(char type) {
        stalled = false;
        armedStall.set(new MessageStall((byte) type));
    }

    /**
     * Silences the connections open now, for good, while new ones are forwarded: what a client sees when
     * the server it talked to vanished without a word (a failover, a lost NAT or firewall entry).
     */
    public void cutExisting() {
        generation.incrementAndGet();
    }

    /**
     * Drops what the client sends on the connections open now and stops reading it, for good, while new connections
     * are forwarded: what a client sees when a lost NAT or firewall entry drops its packets without a reset. Its socket
     * buffers fill and its writes block; a chunk already being read when this is called is dropped too.
     */
    public void jamExisting() {
        jamGeneration.incrementAndGet();
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
                int bornJam = jamGeneration.get();
                pump(client, upstream, "up", born, bornJam);
                pump(upstream, client, "down", born, bornJam);
            } catch (IOException e) {
                if (!closed) {
                    sleepQuietly(50);
                }
            }
        }
    }

    /** One reader that never stops reading and one writer that waits for the gate and the delay. */
    private void pump(Socket from, Socket to, String direction, int born, int bornJam) {
        LinkedBlockingQueue<Chunk> chunks = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> {
            byte[] buffer = new byte[16384];
            boolean downstream = direction.equals("down");
            try (InputStream in = from.getInputStream()) {
                int n;
                MessageStall stall = null;
                while (true) {
                    int want = downstream ? awaitAllowance(buffer.length) : awaitUnjammed(buffer.length);
                    if ((n = in.read(buffer, 0, want)) < 0) {
                        break;
                    }
                    if (!downstream && jamGeneration.get() != bornJam) {
                        awaitWhile(() -> true, "jammed for good");
                        break;
                    }
                    if (downstream) {
                        int read = n;
                        downstreamAllowance.getAndUpdate(left -> left < 0 ? left : Math.max(0, left - read));
                    }
                    if (!downstream && stall == null) {
                        stall = armedStall.getAndSet(null);
                    }
                    int pass = stall == null ? n : stall.passing(buffer, n);
                    if (pass > 0) {
                        chunks.add(new Chunk(Arrays.copyOf(buffer, pass), System.nanoTime()));
                    }
                    if (stall != null && stall.reached()) {
                        chunks.add(Chunk.STALL);
                        stall = null;
                        if (pass < n) {
                            chunks.add(new Chunk(Arrays.copyOfRange(buffer, pass, n), System.nanoTime()));
                        }
                    }
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
                    if (chunk == Chunk.STALL) {
                        awaitUnstalled();
                        continue;
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

    /** How many bytes the downstream reader may read now (at most {@code max}), waiting while none. */
    private int awaitAllowance(int max) throws IOException {
        awaitWhile(() -> downstreamAllowance.get() == 0, "frozen");
        long left = downstreamAllowance.get();
        return left < 0 ? max : (int) Math.max(1, Math.min(max, left));
    }

    /** {@code max}, once the client is no longer jammed. */
    private int awaitUnjammed(int max) throws IOException {
        awaitWhile(() -> clientJammed, "jammed");
        return max;
    }

    /** Waits while {@code held} says so and the proxy is open, for a reader that must not read meanwhile. */
    private void awaitWhile(BooleanSupplier held, String state) throws IOException {
        synchronized (gate) {
            while (held.getAsBoolean() && !closed) {
                try {
                    gate.wait(100);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while " + state, e);
                }
            }
        }
    }

    private void awaitUnstalled() throws InterruptedException {
        synchronized (gate) {
            stalled = true;
            gate.notifyAll();
            while (stalled && !closed) {
                gate.wait(100);
            }
        }
    }

    /** Whether a connection holds back what its client sent after the message {@link #stallClientAfterMessage} awaited. */
    public boolean stalling() {
        return stalled;
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
        static final Chunk STALL = new Chunk(new byte[0], 0);
    }

    /** Follows the frontend messages of one connection until the end of the first one of a type. */
    private static final class MessageStall {
        private final byte type;
        private final byte[] header = new byte[5];
        private int headerRead;
        private long bodyLeft;
        private boolean reached;

        MessageStall(byte type) {
            this.type = type;
        }

        /** How many of the {@code n} bytes read pass before the stall (all of them until the message ends). */
        int passing(byte[] bytes, int n) {
            int i = 0;
            while (i < n && !reached) {
                if (headerRead < header.length) {
                    header[headerRead++] = bytes[i++];
                    if (headerRead == header.length) {
                        int length = ((header[1] & 0xff) << 24) | ((header[2] & 0xff) << 16) | ((header[3] & 0xff) << 8)
                                | (header[4] & 0xff);
                        bodyLeft = length - 4L;
                    }
                } else {
                    int take = (int) Math.min(bodyLeft, n - i);
                    i += take;
                    bodyLeft -= take;
                }
                if (headerRead == header.length && bodyLeft == 0) {
                    reached = header[0] == type;
                    headerRead = 0;
                }
            }
            return i;
        }

        boolean reached() {
            return reached;
        }
    }
}
