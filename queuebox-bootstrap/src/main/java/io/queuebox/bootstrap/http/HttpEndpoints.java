package io.queuebox.bootstrap.http;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.queuebox.embed.config.Masking;
import io.queuebox.ports.Health;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

/**
 * The HTTP endpoints on the JDK's server: {@code /health/live}, {@code /health/ready} (JSON; 200 when every
 * non-advisory component is up, else 503) and {@code /metrics} (Prometheus text); and what {@link #serve} adds
 * (the operator console, when enabled).
 */
public final class HttpEndpoints implements AutoCloseable {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";

    /**
     * Handler threads. The JDK server reads a request's head on a handler thread, so a client that stalls its
     * request holds one until the request time limit closes the connection: a few such clients must not take
     * every thread from /health/live (an orchestrator would restart a working relay).
     */
    static final int THREADS = 16;
    /** The JDK server's request time limit, in seconds (sun.net.httpserver.ServerConfig); unset, there is none. */
    static final String MAX_REQUEST_TIME_PROPERTY = "sun.net.httpserver.maxReqTime";
    /** Seconds a client has to send its whole request before the server closes the connection. */
    static final long DEFAULT_MAX_REQUEST_SECONDS = 10;

    static {
        // ServerConfig reads the property once, when the JDK server's classes initialise: so here, before this
        // class creates its first server. An operator's -Dsun.net.httpserver.maxReqTime wins.
        if (System.getProperty(MAX_REQUEST_TIME_PROPERTY) == null) {
            System.setProperty(MAX_REQUEST_TIME_PROPERTY, Long.toString(DEFAULT_MAX_REQUEST_SECONDS));
        }
    }

    private final HttpServer server;
    private final ExecutorService executor;
    private final Supplier<Health> liveness;
    private final List<HealthComponent> components;
    private final Supplier<String> metrics;

    private HttpEndpoints(HttpServer server, Supplier<Health> liveness, List<HealthComponent> components,
                          Supplier<String> metrics) {
        this.server = server;
        this.liveness = liveness;
        this.components = List.copyOf(components);
        this.metrics = metrics;
        this.executor = Executors.newFixedThreadPool(THREADS, runnable -> {
            Thread thread = new Thread(runnable, "queuebox-http");
            thread.setDaemon(true);
            return thread;
        });
        server.setExecutor(executor);
        server.createContext("/health/live", exchange -> respond(exchange, this::live));
        server.createContext("/health/ready", exchange -> respond(exchange, this::ready));
        server.createContext("/metrics", exchange -> respond(exchange,
                () -> new Response(200, PROMETHEUS_TEXT, metrics.get())));
    }

    /**
     * Starts serving.
     *
     * @param host       address to bind, for example {@code 0.0.0.0}
     * @param port       port; 0 picks a free one (see {@link #port()})
     * @param liveness   whether the process still works (the delivery loop runs)
     * @param components the readiness components in display order
     * @param metrics    the Prometheus text exposition, computed per scrape
     */
    public static HttpEndpoints start(String host, int port, Supplier<Health> liveness,
                                      List<HealthComponent> components, Supplier<String> metrics) {
        try {
            HttpServer server = HttpServer.create(new InetSocketAddress(host, port), 16);
            HttpEndpoints endpoints = new HttpEndpoints(server, liveness, components, metrics);
            server.start();
            return endpoints;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot listen on " + host + ":" + port + " (http.port)", e);
        }
    }

    /**
     * Serves {@code handler} under {@code path} on the same server and port (the console); nothing is added when
     * this is not called.
     */
    public void serve(String path, com.sun.net.httpserver.HttpHandler handler) {
        server.createContext(path, handler);
    }

    /** The port actually bound. */
    public int port() {
        return server.getAddress().getPort();
    }

    private Response live() {
        Health health = safely(liveness);
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("status", health.status().name());
        body.put("detail", health.detail());
        return json(health.isUp() ? 200 : 503, body);
    }

    private Response ready() {
        Map<String, Object> componentsJson = new LinkedHashMap<>();
        boolean ready = true;
        for (HealthComponent component : components) {
            Health health = safely(component.check());
            ready &= component.advisory() || health.isUp();
            Map<String, Object> json = new LinkedHashMap<>();
            json.put("status", health.status().name());
            json.put("advisory", component.advisory());
            json.put("detail", health.detail());
            if (!health.details().isEmpty()) {
                json.put("details", health.details());
            }
            componentsJson.put(component.name(), json);
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("status", ready ? "UP" : "DOWN");
        body.put("components", componentsJson);
        return json(ready ? 200 : 503, body);
    }

    private static Health safely(Supplier<Health> check) {
        try {
            return check.get();
        } catch (RuntimeException e) {
            return Health.down(e.getClass().getSimpleName() + ": " + Masking.maskUrl(String.valueOf(e.getMessage())));
        }
    }

    private static Response json(int status, Map<String, Object> body) {
        try {
            return new Response(status, "application/json", JSON.writeValueAsString(body));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void respond(HttpExchange exchange, Supplier<Response> handler) throws IOException {
        try (exchange) {
            if (!"GET".equals(exchange.getRequestMethod()) && !"HEAD".equals(exchange.getRequestMethod())) {
                exchange.getResponseHeaders().set("Allow", "GET, HEAD");
                exchange.sendResponseHeaders(405, -1);
                return;
            }
            Response response;
            try {
                response = handler.get();
            } catch (RuntimeException e) {
                response = new Response(500, "text/plain; charset=utf-8", e.getClass().getSimpleName());
            }
            byte[] bytes = response.body().getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", response.contentType());
            exchange.getResponseHeaders().set("Cache-Control", "no-store");
            boolean head = "HEAD".equals(exchange.getRequestMethod());
            exchange.sendResponseHeaders(response.status(), head ? -1 : bytes.length);
            if (!head) {
                try (OutputStream out = exchange.getResponseBody()) {
                    out.write(bytes);
                }
            }
        }
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }

    private record Response(int status, String contentType, String body) {
    }
}
