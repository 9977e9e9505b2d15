package io.queuebox.bootstrap.console;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import io.queuebox.bootstrap.console.ConsoleAccess.Refusal;
import io.queuebox.embed.config.Masking;
import io.queuebox.ports.BacklogStats;
import io.queuebox.ports.OutboxStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The operator console on the relay's HTTP server, under {@code /console}: the page and its static files, and
 * the JSON endpoints under {@code /console/api/} (docs/reference/console-api.md). Registered only when
 * {@code console.enabled} is true, so a relay without it answers 404 to every {@code /console} path.
 */
public final class Console implements HttpHandler {

    private static final Logger LOG = LoggerFactory.getLogger(Console.class);
    public static final String PATH = "/console";
    private static final String API = PATH + "/api/";
    /** A request body is a small selector; anything larger is not one. */
    private static final int MAX_BODY_BYTES = 16 * 1024;
    /** default-src 'self' with no 'unsafe-inline': a payload that slipped into the page's markup would not run. */
    static final String CONTENT_SECURITY_POLICY =
            "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";
    private static final Map<String, String> STATIC_FILES = Map.of(
            "/console/", "index.html",
            "/console/console.js", "console.js",
            "/console/console.css", "console.css");

    private final ConsoleSettings settings;
    private final ConsoleAccess access;
    private final OutboxStore store;
    private final ConsoleSeries series;
    private final ParkedEvents parked;
    private final CaptureView capture;

    public Console(ConsoleSettings settings, OutboxStore store, ConsoleSeries series, Supplier<CaptureFacts> capture) {
        this.settings = settings;
        this.access = new ConsoleAccess(settings);
        this.store = store;
        this.series = series;
        this.parked = new ParkedEvents(store);
        this.capture = new CaptureView(capture);
    }

    @Override
    public void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            Response response;
            try {
                response = route(exchange);
            } catch (BadRequest e) {
                response = error(400, e.getMessage());
            } catch (RuntimeException e) {
                // The message may carry a URL or SQL; the log masks it, the answer names only the kind.
                LOG.warn("console: {} {} failed: {}", exchange.getRequestMethod(), exchange.getRequestURI().getPath(),
                        Masking.maskUrl(String.valueOf(e)));
                response = error(500, "internal error (" + e.getClass().getSimpleName() + "); see the relay's log");
            }
            send(exchange, response);
        }
    }

    private Response route(HttpExchange exchange) throws IOException {
        Optional<Refusal> refused = access.client(exchange.getRemoteAddress())
                .or(() -> access.host(exchange.getRequestHeaders()));
        if (refused.isPresent()) {
            return error(refused.get());
        }
        String path = exchange.getRequestURI().getPath();
        String method = exchange.getRequestMethod();
        if (path.equals(PATH)) {
            return new Response(302, "text/plain; charset=utf-8", new byte[0], Map.of("Location", PATH + "/"));
        }
        if (STATIC_FILES.containsKey(path)) {
            return isRead(method) ? staticFile(STATIC_FILES.get(path)) : notAllowed("GET, HEAD");
        }
        if (!path.startsWith(API)) {
            return error(404, "no such console path");
        }
        String endpoint = path.substring(API.length());
        switch (endpoint) {
            case "session":
                return isRead(method) ? session() : notAllowed("GET, HEAD");
            case "overview":
            case "parked":
            case "capture":
                if (!isRead(method)) {
                    return notAllowed("GET, HEAD");
                }
                refused = access.read(exchange.getRequestHeaders());
                if (refused.isPresent()) {
                    return error(refused.get());
                }
                return endpoint.equals("overview") ? overview()
                        : endpoint.equals("capture") ? json(200, capture.json())
                        : json(200, parked.list(ReplayRequest.Filter.fromQuery(query(exchange)),
                                limit(query(exchange).get("limit"))));
            case "replay/dry-run":
            case "replay":
                if (!method.equals("POST")) {
                    return notAllowed("POST");
                }
                refused = access.change(exchange.getRequestHeaders());
                if (refused.isPresent()) {
                    return error(refused.get());
                }
                ReplayRequest request = ReplayRequest.parse(body(exchange));
                return json(200, endpoint.equals("replay") ? replay(request) : parked.dryRun(request));
            default:
                return error(404, "no such console endpoint: " + endpoint);
        }
    }

    private Map<String, Object> replay(ReplayRequest request) {
        Map<String, Object> result = parked.replay(request);
        // What was replayed, never the token that allowed it.
        LOG.info("console: replayed {} parked event(s) ({})", result.get("replayed"), LogText.escape(request.describe()));
        return result;
    }

    private Response session() {
        String csrf = ConsoleAccess.newCsrfToken();
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("csrfToken", csrf);
        body.put("replayEnabled", settings.replayEnabled());
        body.put("readRequiresToken", settings.readRequiresToken());
        body.put("sampleIntervalMs", series.interval().toMillis());
        body.put("payloadPreviewBytes", ParkedEvents.PREVIEW_BYTES);
        body.put("scanLimit", ParkedEvents.SCAN_LIMIT);
        // HttpOnly: the page takes the token from this body; the cookie only has to come back with the request.
        String cookie = ConsoleAccess.CSRF_COOKIE + "=" + csrf + "; Path=" + PATH + "; SameSite=Strict; HttpOnly";
        return new Response(200, "application/json", ConsoleJson.write(body).getBytes(StandardCharsets.UTF_8),
                Map.of("Set-Cookie", cookie));
    }

    private Response overview() {
        BacklogStats stats = store.stats();
        Map<String, Object> backlog = new LinkedHashMap<>();
        backlog.put("pending", stats.pending());
        backlog.put("leased", stats.leased());
        backlog.put("parked", stats.parked());
        backlog.put("oldestPendingAgeMs", stats.oldestPendingAge().map(java.time.Duration::toMillis).orElse(null));
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("backlog", backlog);
        body.put("intervalMs", series.interval().toMillis());
        body.put("points", series.points());
        return json(200, body);
    }

    private static int limit(String value) {
        if (value == null || value.isBlank()) {
            return 100;
        }
        try {
            int limit = Integer.parseInt(value.trim());
            if (limit < 1 || limit > ParkedEvents.SCAN_LIMIT) {
                throw new BadRequest("limit: between 1 and " + ParkedEvents.SCAN_LIMIT + ", got " + limit);
            }
            return limit;
        } catch (NumberFormatException e) {
            throw new BadRequest("limit: a whole number, got '" + value + "'");
        }
    }

    private static boolean isRead(String method) {
        return method.equals("GET") || method.equals("HEAD");
    }

    private static Map<String, String> query(HttpExchange exchange) {
        Map<String, String> values = new LinkedHashMap<>();
        String raw = exchange.getRequestURI().getRawQuery();
        if (raw == null) {
            return values;
        }
        for (String pair : raw.split("&")) {
            int equals = pair.indexOf('=');
            String name = URLDecoder.decode(equals < 0 ? pair : pair.substring(0, equals), StandardCharsets.UTF_8);
            String value = equals < 0 ? "" : URLDecoder.decode(pair.substring(equals + 1), StandardCharsets.UTF_8);
            values.put(name, value);
        }
        return values;
    }

    private static JsonNode body(HttpExchange exchange) throws IOException {
        try (InputStream in = exchange.getRequestBody()) {
            byte[] bytes = in.readNBytes(MAX_BODY_BYTES + 1);
            if (bytes.length > MAX_BODY_BYTES) {
                throw new BadRequest("request body over " + MAX_BODY_BYTES + " bytes");
            }
            try {
                return ConsoleJson.mapper().readTree(bytes.length == 0 ? "{}".getBytes(StandardCharsets.UTF_8) : bytes);
            } catch (IOException e) {
                throw new BadRequest("request body is not JSON");
            }
        }
    }

    private Response staticFile(String name) throws IOException {
        try (InputStream in = Console.class.getResourceAsStream(name)) {
            if (in == null) {
                return error(404, "no such console file");
            }
            String type = name.endsWith(".html") ? "text/html; charset=utf-8"
                    : name.endsWith(".js") ? "text/javascript; charset=utf-8" : "text/css; charset=utf-8";
            return new Response(200, type, in.readAllBytes(), Map.of());
        }
    }

    private static Response notAllowed(String allow) {
        return new Response(405, "application/json",
                ConsoleJson.write(Map.of("error", "method not allowed; allowed: " + allow)).getBytes(StandardCharsets.UTF_8),
                Map.of("Allow", allow));
    }

    private static Response error(Refusal refusal) {
        return error(refusal.status(), refusal.message());
    }

    private static Response error(int status, String message) {
        return json(status, Map.of("error", message));
    }

    private static Response json(int status, Object body) {
        return new Response(status, "application/json", ConsoleJson.write(body).getBytes(StandardCharsets.UTF_8), Map.of());
    }

    private static void send(HttpExchange exchange, Response response) throws IOException {
        var headers = exchange.getResponseHeaders();
        headers.set("Content-Type", response.contentType());
        headers.set("Cache-Control", "no-store");
        headers.set("Content-Security-Policy", CONTENT_SECURITY_POLICY);
        headers.set("X-Content-Type-Options", "nosniff");
        headers.set("X-Frame-Options", "DENY");
        headers.set("Referrer-Policy", "no-referrer");
        response.headers().forEach(headers::set);
        boolean head = exchange.getRequestMethod().equals("HEAD");
        exchange.sendResponseHeaders(response.status(), head || response.body().length == 0 ? -1 : response.body().length);
        if (!head && response.body().length > 0) {
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(response.body());
            }
        }
    }

    private record Response(int status, String contentType, byte[] body, Map<String, String> headers) {
    }

    /** A request the console cannot understand; its message names the field at fault. */
    static final class BadRequest extends RuntimeException {
        BadRequest(String message) {
            super(message);
        }
    }
}
