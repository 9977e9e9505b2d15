package io.queuebox.jdbc;

import java.util.Objects;
import java.util.regex.Pattern;

/** The checks the SQL adapters' settings builders share; each message names the configuration key. */
public final class SettingChecks {

    private SettingChecks() {
    }

    /**
     * {@code value} if it matches {@code pattern}, so that an identifier from configuration never reaches SQL
     * unchecked. {@code letters} says which letters the pattern allows ("letters", "lower-case letters").
     */
    public static String identifier(String key, String value, Pattern pattern, int maxLength, String letters) {
        Objects.requireNonNull(value, key);
        if (!pattern.matcher(value).matches()) {
            throw new IllegalArgumentException(key + ": '" + value + "' is not a valid identifier: use 1-"
                    + maxLength + " " + letters + ", digits or '_', starting with a letter or '_'");
        }
        return value;
    }

    public static int atLeastOne(String key, int value) {
        if (value < 1) {
            throw new IllegalArgumentException(key + ": must be at least 1, got: " + value);
        }
        return value;
    }
}
