package io.queuebox.bootstrap.console;

import com.sun.net.httpserver.Headers;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Optional;

/**
 * Who may do what on the console: loopback clients only unless {@code console.allowRemote}, and only under a
 * name the console is served under ({@link ConsoleHosts}, the DNS rebinding defence); a bearer token for
 * reads when {@code console.readRequiresToken}; for a change, the admin token plus a same-origin request carrying
 * the CSRF token it was given (double submit: the {@value #CSRF_COOKIE} cookie and the {@value #CSRF_HEADER}
 * header must agree). A browser attaches cookies to a forged cross-site request but cannot read them to fill the
 * header, and the bearer token is kept in the page's memory, never in a cookie, so a forged request has neither.
 */
final class ConsoleAccess {

    static final String CSRF_COOKIE = "queuebox_csrf";
    static final String CSRF_HEADER = "X-CSRF-Token";

    /** Why a request is refused: an HTTP status and a sentence for the operator (never a token). */
    record Refusal(int status, String message) {
    }

    private static final SecureRandom RANDOM = new SecureRandom();

    private final ConsoleSettings settings;
    private final ConsoleHosts hosts;

    ConsoleAccess(ConsoleSettings settings) {
        this.settings = settings;
        this.hosts = ConsoleHosts.of(settings.allowRemote(), settings.allowedHosts());
    }

    /**
     * The DNS rebinding defence, for every console request: the {@code Host} must be a name the console is served
     * under ({@link ConsoleHosts}). 421 Misdirected Request: the request reached this server under a name that is
     * not its own.
     */
    Optional<Refusal> host(Headers headers) {
        return hosts.allowsHost(headers.getFirst("Host")) ? Optional.empty()
                : Optional.of(new Refusal(421, "the Host of this request is not a name the console is served under ("
                        + hosts.describe() + "); to reach it under another name (an SSH tunnel's, a proxy's), add"
                        + " that name to console.allowedHosts"));
    }

    Optional<Refusal> client(InetSocketAddress remote) {
        boolean local = remote != null && remote.getAddress() != null && remote.getAddress().isLoopbackAddress();
        return settings.allowRemote() || local ? Optional.empty()
                : Optional.of(new Refusal(403, "the console answers this host only (console.allowRemote is false)"));
    }

    Optional<Refusal> read(Headers headers) {
        if (!settings.readRequiresToken()) {
            return Optional.empty();
        }
        Optional<String> given = bearer(headers);
        if (given.isEmpty()) {
            return Optional.of(new Refusal(401, "a bearer token is required (console.readRequiresToken is true)"));
        }
        if (matches(given.get(), settings.readToken()) || matches(given.get(), settings.adminToken())) {
            return Optional.empty();
        }
        return Optional.of(new Refusal(401, "the bearer token is not console.readToken nor console.adminToken"));
    }

    /** The admin token, the origin and the CSRF token of a change. */
    Optional<Refusal> change(Headers headers) {
        if (!settings.replayEnabled()) {
            return Optional.of(new Refusal(403, "the console is read-only: set console.adminToken to allow replay"));
        }
        Optional<String> given = bearer(headers);
        if (given.isEmpty()) {
            return Optional.of(new Refusal(401, "the admin token is required (Authorization: Bearer ...)"));
        }
        if (!matches(given.get(), settings.adminToken())) {
            return Optional.of(new Refusal(401, "the bearer token is not console.adminToken"));
        }
        if (!sameOrigin(headers)) {
            return Optional.of(new Refusal(403, "cross-origin request refused: Origin must name a host the console is"
                    + " served under (a loopback name unless console.allowRemote, or one of console.allowedHosts)"));
        }
        String header = headers.getFirst(CSRF_HEADER);
        Optional<String> cookie = cookie(headers, CSRF_COOKIE);
        if (header == null || header.isBlank() || cookie.isEmpty()
                || !MessageDigest.isEqual(bytes(header.trim()), bytes(cookie.get()))) {
            return Optional.of(new Refusal(403, "missing or wrong CSRF token: GET /console/api/session first and send"
                    + " its csrfToken in " + CSRF_HEADER));
        }
        return Optional.empty();
    }

    /**
     * Same origin when the browser says so: {@code Origin} naming a host the console is served under (never
     * compared with the request's own {@code Host}, which a rebinding page controls), or no {@code Origin} but
     * {@code Sec-Fetch-Site: same-origin} (the {@code Host} has then passed {@link #host}). A request with neither
     * (curl) is not a browser's forged request, but it is refused as well, so that the rule stays one a reader can
     * check.
     */
    boolean sameOrigin(Headers headers) {
        String origin = headers.getFirst("Origin");
        if (origin != null) {
            return hosts.allowsOrigin(origin);
        }
        return "same-origin".equals(headers.getFirst("Sec-Fetch-Site")) && hosts.allowsHost(headers.getFirst("Host"));
    }

    static String newCsrfToken() {
        byte[] bytes = new byte[24];
        RANDOM.nextBytes(bytes);
        return HexFormat.of().formatHex(bytes);
    }

    private static Optional<String> bearer(Headers headers) {
        String authorization = headers.getFirst("Authorization");
        if (authorization == null || !authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return Optional.empty();
        }
        String token = authorization.substring(7).trim();
        return token.isEmpty() ? Optional.empty() : Optional.of(token);
    }

    /** Constant time in the token's content, so timing tells an attacker nothing about how much matched. */
    private static boolean matches(String given, Optional<String> expected) {
        return expected.isPresent() && MessageDigest.isEqual(bytes(given), bytes(expected.get()));
    }

    static Optional<String> cookie(Headers headers, String name) {
        for (String line : headers.getOrDefault("Cookie", java.util.List.of())) {
            for (String pair : line.split(";")) {
                int equals = pair.indexOf('=');
                if (equals > 0 && pair.substring(0, equals).trim().equals(name)) {
                    String value = pair.substring(equals + 1).trim();
                    return value.isEmpty() ? Optional.empty() : Optional.of(value);
                }
            }
        }
        return Optional.empty();
    }

    private static byte[] bytes(String value) {
        return value.getBytes(StandardCharsets.UTF_8);
    }
}
