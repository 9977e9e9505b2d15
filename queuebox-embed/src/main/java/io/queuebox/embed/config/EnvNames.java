package io.queuebox.embed.config;

import java.util.Locale;

/**
 * The one rule that maps a configuration key to the environment variable that overrides it:
 * {@code QUEUEBOX_} followed by the key upper-cased, where every dot and dash becomes {@code _} and every
 * lower-case letter or digit followed by an upper-case letter gets a {@code _} between them.
 * {@code outbox.pollIntervalMs} becomes {@code QUEUEBOX_OUTBOX_POLL_INTERVAL_MS}.
 */
public final class EnvNames {

    public static final String PREFIX = "QUEUEBOX_";

    private EnvNames() {
    }

    public static String forKey(String key) {
        StringBuilder env = new StringBuilder(PREFIX);
        char previous = '.';
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (c == '.' || c == '-' || c == '_') {
                env.append('_');
            } else {
                if (Character.isUpperCase(c) && (Character.isLowerCase(previous) || Character.isDigit(previous))) {
                    env.append('_');
                }
                env.append(Character.toUpperCase(c));
            }
            previous = c;
        }
        return env.toString().toUpperCase(Locale.ROOT);
    }
}
