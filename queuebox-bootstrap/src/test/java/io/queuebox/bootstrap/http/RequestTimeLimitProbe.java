package io.queuebox.bootstrap.http;

import io.queuebox.ports.Health;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Run in a JVM of its own by {@link RequestTimeLimitTest} (the JDK server reads its configuration once per JVM):
 * starts the endpoints, prints the request time limit the JDK server's ServerConfig actually took, and, when asked,
 * how long the server let a stalled request head hold its connection.
 */
public final class RequestTimeLimitProbe {

    public static void main(String[] args) throws Exception {
        try (HttpEndpoints endpoints = HttpEndpoints.start("127.0.0.1", 0, () -> Health.up("probe"), List.of(),
                () -> "")) {
            Method maxReqTime = Class.forName("sun.net.httpserver.ServerConfig").getDeclaredMethod("getMaxReqTime");
            maxReqTime.setAccessible(true); // needs --add-opens jdk.httpserver/sun.net.httpserver=ALL-UNNAMED
            System.out.println("maxReqTime=" + maxReqTime.invoke(null));
            if (args.length > 0 && args[0].equals("stall")) {
                try (Socket socket = new Socket("127.0.0.1", endpoints.port())) {
                    socket.getOutputStream().write("GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                            .getBytes(StandardCharsets.US_ASCII));
                    socket.getOutputStream().flush();
                    socket.setSoTimeout(30_000);
                    long started = System.nanoTime();
                    InputStream in = socket.getInputStream();
                    try {
                        while (in.read() >= 0) {
                            // whatever the server writes before it closes
                        }
                    } catch (SocketTimeoutException e) {
                        System.out.println("closedAfterMs=never");
                        return;
                    } catch (java.io.IOException reset) {
                        // a reset is a close too
                    }
                    System.out.println("closedAfterMs=" + (System.nanoTime() - started) / 1_000_000);
                }
            }
        }
    }
}
