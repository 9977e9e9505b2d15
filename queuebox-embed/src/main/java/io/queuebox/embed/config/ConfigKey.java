package io.queuebox.embed.config;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * One configuration key as documented: its name, what values it takes, its default and whether it is a secret.
 *
 * @param name         the dotted name as written in YAML, for example {@code outbox.pollIntervalMs}
 * @param type         what values the key takes
 * @param defaultValue the value when nothing sets the key; {@code null} for none
 * @param required     whether a value must be given (no default exists)
 * @param allowed      for {@link Type#CHOICE}: the allowed values; empty otherwise
 * @param min          smallest allowed number (numeric types)
 * @param max          largest allowed number (numeric types)
 * @param secret       whether the value is masked when printed and may be read from a file
 * @param doc          one sentence for the reference page and the {@code config check} output
 * @param database     the {@link io.queuebox.jdbc.DatabaseProvider#name() database} the key applies to;
 *                     {@code null} when it applies to every database
 * @param databaseDefault whether the default comes from the database in use (see {@link Databases#defaultValue})
 */
public record ConfigKey(String name, Type type, String defaultValue, boolean required, List<String> allowed,
                        double min, double max, boolean secret, String doc, String database,
                        boolean databaseDefault) {

    /** The kinds of value a key takes. */
    public enum Type {
        STRING("text"),
        INTEGER("integer"),
        MILLIS("duration in milliseconds"),
        DECIMAL("decimal number"),
        BOOLEAN("true or false"),
        CHOICE("one of a list"),
        IDENTIFIER("SQL identifier"),
        TABLE_NAME("SQL identifier by the database's rules"),
        PATH("file system path"),
        JDBC_URL("JDBC URL");

        private final String description;

        Type(String description) {
            this.description = description;
        }

        public String description() {
            return description;
        }
    }

    public ConfigKey {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(type, "type");
        allowed = List.copyOf(allowed);
        Objects.requireNonNull(doc, "doc");
    }

    /** Whether the key applies when the database is {@code databaseName}. */
    public boolean appliesTo(String databaseName) {
        return database == null || database.equals(databaseName);
    }

    public Optional<String> defaultOrEmpty() {
        return Optional.ofNullable(defaultValue);
    }

    /** The environment variable that overrides this key. */
    public String envName() {
        return EnvNames.forKey(name);
    }

    /** What a person may write, for problem messages and the reference page. */
    public String allowedDescription() {
        return switch (type) {
            case CHOICE -> "one of " + String.join(", ", allowed);
            case BOOLEAN -> "true or false";
            case INTEGER, MILLIS -> "an integer from " + (long) min + " to " + (long) max
                    + (type == Type.MILLIS ? " (milliseconds)" : "");
            case DECIMAL -> "a number from " + min + " to " + max;
            case IDENTIFIER -> "a lower-case SQL identifier: a letter or _ then lower-case letters, digits or _, at most 63 characters";
            case TABLE_NAME -> Databases.available().stream()
                    .map(provider -> provider.displayName() + " " + provider.identifierRules())
                    .collect(java.util.stream.Collectors.joining("; "));
            case JDBC_URL -> "a JDBC URL of " + Databases.available().stream()
                    .map(provider -> provider.displayName() + " (" + provider.exampleUrl() + ")")
                    .collect(java.util.stream.Collectors.joining(" or "));
            case PATH -> "a file system path";
            case STRING -> "non-empty text";
        };
    }

    static Builder key(String name, Type type) {
        return new Builder(name, type);
    }

    static final class Builder {
        private final String name;
        private final Type type;
        private String defaultValue;
        private boolean required;
        private List<String> allowed = List.of();
        private double min = Long.MIN_VALUE;
        private double max = Long.MAX_VALUE;
        private boolean secret;
        private String doc = "";
        private String database;
        private boolean databaseDefault;

        private Builder(String name, Type type) {
            this.name = name;
            this.type = type;
            if (type == Type.INTEGER) {
                min = Integer.MIN_VALUE;
                max = Integer.MAX_VALUE;
            }
        }

        Builder defaultValue(Object value) {
            this.defaultValue = String.valueOf(value);
            return this;
        }

        Builder required() {
            this.required = true;
            return this;
        }

        Builder allowed(String... values) {
            this.allowed = List.of(values);
            return this;
        }

        Builder range(double min, double max) {
            this.min = min;
            this.max = max;
            return this;
        }

        Builder secret() {
            this.secret = true;
            return this;
        }

        /** The key applies only to the database of this {@link io.queuebox.jdbc.DatabaseProvider#name() name}. */
        Builder onlyFor(String database) {
            this.database = database;
            return this;
        }

        /** The default depends on the database in use. */
        Builder defaultFromDatabase() {
            this.databaseDefault = true;
            return this;
        }

        Builder doc(String doc) {
            this.doc = doc;
            return this;
        }

        ConfigKey build() {
            return new ConfigKey(name, type, defaultValue, required, allowed, min, max, secret, doc, database,
                    databaseDefault);
        }
    }
}
