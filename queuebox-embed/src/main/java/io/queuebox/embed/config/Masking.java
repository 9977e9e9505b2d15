package io.queuebox.embed.config;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Keeps secrets out of printed configuration, logs and messages. */
public final class Masking {

    public static final String MASK = "******";

    // password=... in a JDBC query string or property list, up to the next separator.
    private static final Pattern PASSWORD_PARAMETER =
            Pattern.compile("(?i)((?:password|pwd|sslpassword|secret|token)=)(\\{(?:[^}]|\\}\\})*(?:\\}|$)|[^&;\\s]*)");
    // user:password@ in a URI (amqp://guest:guest@host).
    private static final Pattern USER_INFO = Pattern.compile("(//[^/:@\\s]*:)([^@/\\s]*)(@)");

    private Masking() {
    }

    /** Replaces passwords in URLs and parameter lists; leaves everything else as it is. */
    public static String maskUrl(String text) {
        if (text == null) {
            return null;
        }
        String masked = PASSWORD_PARAMETER.matcher(text).replaceAll(m -> Matcher.quoteReplacement(m.group(1) + MASK));
        return USER_INFO.matcher(masked).replaceAll(m -> Matcher.quoteReplacement(m.group(1) + MASK + m.group(3)));
    }

    /** The value as it may be shown for this key: masked entirely for a secret, with URL passwords masked otherwise. */
    public static String forDisplay(String key, String value) {
        if (value == null) {
            return null;
        }
        if (Keys.isSecret(key)) {
            return MASK;
        }
        return maskUrl(value);
    }

    /** Whether a name (an environment variable, a setting) says it holds a secret. */
    static boolean looksSecret(String name) {
        String lower = name.toLowerCase(Locale.ROOT);
        return lower.contains("password") || lower.contains("secret") || lower.contains("token")
                || lower.contains("credential") || lower.contains("jaas");
    }
}
