package io.queuebox.bootstrap.console;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.LinkedHashMap;
import java.util.Map;

/** The console's HTTP API as a script would call it: a session (CSRF cookie and token), reads and changes. */
public final class ConsoleClient {

    private static final ObjectMapper JSON = new ObjectMapper();

    private final HttpClient http = HttpClient.newHttpClient();
    private final String base;
    private String csrfToken;
    private String csrfCookie;

    public ConsoleClient(String host, int port) {
        this.base = "http://" + host + ":" + port;
    }

    public String origin() {
        return base;
    }

    /** GET /console/api/session: keeps the CSRF token of its body and the cookie it set. */
    public JsonNode session() throws Exception {
        HttpResponse<String> response = get("/console/api/session", null);
        csrfCookie = response.headers().firstValue("Set-Cookie").orElseThrow().split(";")[0];
        JsonNode body = JSON.readTree(response.body());
        csrfToken = body.get("csrfToken").asText();
        return body;
    }

    public HttpResponse<String> get(String path, String bearer) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + path)).GET();
        if (bearer != null) {
            request.header("Authorization", "Bearer " + bearer);
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** A change as the page sends it: bearer token, same Origin, CSRF header and cookie. */
    public HttpResponse<String> post(String path, String body, String bearer) throws Exception {
        return post(path, body, bearer, origin(), csrfToken, csrfCookie);
    }

    /** A change with every defence chosen by the caller; null leaves a header out. */
    public HttpResponse<String> post(String path, String body, String bearer, String origin, String csrfHeader,
                                     String cookie) throws Exception {
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("Content-Type", "application/json");
        if (bearer != null) {
            headers.put("Authorization", "Bearer " + bearer);
        }
        if (origin != null) {
            headers.put("Origin", origin);
        }
        if (csrfHeader != null) {
            headers.put("X-CSRF-Token", csrfHeader);
        }
        if (cookie != null) {
            headers.put("Cookie", cookie);
        }
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + path))
                .POST(HttpRequest.BodyPublishers.ofString(body));
        headers.forEach(request::header);
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    public String csrfToken() {
        return csrfToken;
    }

    public String csrfCookie() {
        return csrfCookie;
    }

    public static JsonNode json(HttpResponse<String> response) throws Exception {
        return JSON.readTree(response.body());
    }
}
