package io.queuebox.bootstrap.console;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The names the console is served under: the only ones a request's {@code Host}, and a change's {@code Origin},
 * may carry. A loopback peer address proves nothing about the page that sent the request: under DNS rebinding a
 * page on the attacker's name, re-pointed at 127.0.0.1, is same-origin with the console in the operator's browser
 * and its requests come from loopback. The browser still sends the attacker's name as {@code Host} and
 * {@code Origin}, which it does not let the page change; so the console answers only names it is served under.
 *
 * <p>Without {@code console.allowRemote} those are the loopback names (localhost, 127.x.x.x, [::1]; any port),
 * which a rebinding attacker cannot own, plus {@code console.allowedHosts}. With it, only
 * {@code console.allowedHosts} (which must then be non-empty). An entry {@code name} allows any port,
 * {@code name:port} that port only.
 */
final class ConsoleHosts {

    /** A host or host:port as an entry of console.allowedHosts, a Host header or an Origin's authority. */
    static final Pattern AUTHORITY = Pattern.compile("(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9._-]+)(?::(\\d{1,5}))?");
    private static final Pattern LOOPBACK_IPV4 = Pattern.compile("127(?:\\.(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)){3}");

    private record Authority(String host, OptionalInt port) {
        static Optional<Authority> parse(String text) {
            Matcher matcher = AUTHORITY.matcher(text == null ? "" : text.trim());
            if (!matcher.matches()) {
                return Optional.empty();
            }
            String port = matcher.group(2);
            try {
                return Optional.of(new Authority(matcher.group(1).toLowerCase(Locale.ROOT),
                        port == null ? OptionalInt.empty() : OptionalInt.of(Integer.parseInt(port))));
            } catch (NumberFormatException e) {
                return Optional.empty();
            }
        }

        /** An entry without a port allows any port; one with a port that port only. */
        boolean allows(Authority given) {
            return host.equals(given.host) && (port.isEmpty() || port.equals(given.port));
        }
    }

    private final boolean loopbackNames;
    private final List<Authority> allowed;

    private ConsoleHosts(boolean loopbackNames, List<Authority> allowed) {
        this.loopbackNames = loopbackNames;
        this.allowed = List.copyOf(allowed);
    }

    /**
     * @param allowRemote  {@code console.allowRemote}: true drops the loopback names
     * @param allowedHosts the entries of {@code console.allowedHosts}, already validated
     */
    static ConsoleHosts of(boolean allowRemote, List<String> allowedHosts) {
        List<Authority> allowed = new ArrayList<>();
        for (String entry : allowedHosts) {
            allowed.add(Authority.parse(entry).orElseThrow(() -> new IllegalArgumentException(
                    "console.allowedHosts: '" + entry + "' is not a host or host:port")));
        }
        return new ConsoleHosts(!allowRemote, allowed);
    }

    /** Whether {@code hostHeader} (host or host:port) is a name this console is served under. */
    boolean allowsHost(String hostHeader) {
        return Authority.parse(hostHeader).filter(this::allows).isPresent();
    }

    /**
     * Whether {@code origin} ({@code http://host[:port]} or {@code https://...}, as a browser sends it) names a
     * host this console is served under. Without a port the scheme's default applies. Never compared with the
     * request's own {@code Host}, which a rebinding page controls.
     */
    boolean allowsOrigin(String origin) {
        if (origin == null) {
            return false;
        }
        int defaultPort;
        String authority;
        if (origin.startsWith("http://")) {
            defaultPort = 80;
            authority = origin.substring("http://".length());
        } else if (origin.startsWith("https://")) {
            defaultPort = 443;
            authority = origin.substring("https://".length());
        } else {
            return false; // "null" (a sandboxed or file: page) and other schemes are no origin of the console's
        }
        return Authority.parse(authority)
                .map(a -> a.port().isPresent() ? a : new Authority(a.host(), OptionalInt.of(defaultPort)))
                .filter(this::allows).isPresent();
    }

    private boolean allows(Authority given) {
        return (loopbackNames && isLoopbackName(given.host())) || allowed.stream().anyMatch(entry -> entry.allows(given));
    }

    private static boolean isLoopbackName(String host) {
        return host.equals("localhost") || host.equals("[::1]") || LOOPBACK_IPV4.matcher(host).matches();
    }

    /** For the start-up line: what the console answers to. */
    String describe() {
        List<String> names = new ArrayList<>();
        if (loopbackNames) {
            names.add("localhost, 127.x.x.x, [::1]");
        }
        allowed.forEach(entry -> names.add(entry.host() + entry.port().stream().mapToObj(p -> ":" + p).findFirst().orElse("")));
        return String.join(", ", names);
    }
}
