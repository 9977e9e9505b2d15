package io.queuebox.testkit.faults;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@link TcpProxy#jamExisting()} against a local echo server: old connections go silent, new ones still pass. */
class TcpProxyJamExistingTest {

    private ServerSocket echo;

    @BeforeEach
    void startEcho() throws IOException {
        echo = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(() -> {
            while (!echo.isClosed()) {
                try {
                    Socket socket = echo.accept();
                    Thread echoing = new Thread(() -> {
                        try (socket; InputStream in = socket.getInputStream(); OutputStream out = socket.getOutputStream()) {
                            int b;
                            while ((b = in.read()) >= 0) {
                                out.write(b);
                                out.flush();
                            }
                        } catch (IOException ignored) {
                            // the proxy went away
                        }
                    });
                    echoing.setDaemon(true);
                    echoing.start();
                } catch (IOException closed) {
                    return;
                }
            }
        });
        acceptor.setDaemon(true);
        acceptor.start();
    }

    @AfterEach
    void stopEcho() throws IOException {
        echo.close();
    }

    @Test
    void whatAnOldConnectionSendsIsDroppedWhileANewConnectionIsForwarded() throws Exception {
        try (TcpProxy proxy = new TcpProxy("127.0.0.1", echo.getLocalPort());
             Socket old = connect(proxy)) {
            assertThat(roundTrip(old, 'a')).as("before the jam").isEqualTo('a');

            proxy.jamExisting();

            assertThat(roundTrip(old, 'b')).as("an old connection's byte after the jam").isEqualTo(-1);
            try (Socket fresh = connect(proxy)) {
                assertThat(roundTrip(fresh, 'c')).as("a new connection's byte").isEqualTo('c');
            }
            assertThat(roundTrip(old, 'd')).as("the old connection stays jammed").isEqualTo(-1);
        }
    }

    private static Socket connect(TcpProxy proxy) throws IOException {
        Socket socket = new Socket(InetAddress.getLoopbackAddress(), proxy.port());
        socket.setSoTimeout(1_000);
        return socket;
    }

    /** The byte echoed back for {@code sent}, or -1 when none came within the socket's timeout. */
    private static int roundTrip(Socket socket, char sent) throws IOException {
        socket.getOutputStream().write(sent);
        socket.getOutputStream().flush();
        try {
            return socket.getInputStream().read();
        } catch (SocketTimeoutException silent) {
            return -1;
        }
    }
}
