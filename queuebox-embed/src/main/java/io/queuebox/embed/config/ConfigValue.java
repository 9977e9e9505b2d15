package io.queuebox.embed.config;

/**
 * A value and where it came from.
 *
 * @param value  the value as text
 * @param origin {@code default}, {@code file <path>}, or {@code env <NAME>}
 */
public record ConfigValue(String value, String origin) {
}
