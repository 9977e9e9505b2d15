package io.queuebox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
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
                try (WriteWatchdog.Watch watch = watchdog.watch(System.nanoTime() + Duration.ofMillis(300).toNanos())) {
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
            assertThat(client.isClosed()).isTrue();
            accepted.get(5, TimeUnit.SECONDS).close();
        }
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
