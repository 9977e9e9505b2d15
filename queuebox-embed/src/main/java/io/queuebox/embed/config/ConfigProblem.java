package io.queuebox.embed.config;

import java.util.Objects;

/**
 * One thing wrong with the configuration.
 *
 * @param key     the key at fault (or the environment variable, or the file, when no key applies)
 * @param value   the value as given, already masked when the key is a secret; {@code null} when none was given
 * @param problem what is wrong and what is allowed
 */
public record ConfigProblem(String key, String value, String problem) {
    public ConfigProblem {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(problem, "problem");
    }

    @Override
    public String toString() {
        return key + (value == null ? "" : " = '" + value + "'") + ": " + problem;
    }
}
