package io.queuebox.embed.config;

import io.queuebox.jdbc.DatabaseProvider;
import java.util.stream.Collectors;

/** Renders the key table of docs/reference/configuration.md from {@link Keys}, so the page cannot drift. */
public final class ReferenceTable {

    private ReferenceTable() {
    }

    public static String markdown() {
        String header = "| Key | Type | Default | Database | Environment variable | Description |\n"
                + "| --- | --- | --- | --- | --- | --- |\n";
        return header + Keys.all().stream().map(key -> "| `" + key.name() + "` | " + typeOf(key) + " | "
                        + defaultOf(key) + " | " + databaseOf(key) + " | `" + key.envName() + "` | "
                        + key.doc().replace("|", "\\|") + " |")
                .collect(Collectors.joining("\n")) + "\n";
    }

    /** The default of a key on one database, as the reference pages write it: {@code `value`}, or none. */
    public static String defaultOn(DatabaseProvider database, ConfigKey key) {
        if (key.required()) {
            return "required";
        }
        String value = key.databaseDefault() ? Databases.defaultValue(database, key) : key.defaultValue();
        return value == null ? "none" : "`" + value + "`";
    }

    private static String typeOf(ConfigKey key) {
        String type = key.allowedDescription().replace("|", "\\|");
        return key.secret() ? type + ", secret" : type;
    }

    private static String defaultOf(ConfigKey key) {
        if (key.databaseDefault()) {
            return Databases.available().stream()
                    .map(database -> defaultOn(database, key) + " on " + database.displayName())
                    .collect(Collectors.joining(", "));
        }
        if (key.required()) {
            return "required";
        }
        return key.defaultValue() == null ? "none" : "`" + key.defaultValue() + "`";
    }

    private static String databaseOf(ConfigKey key) {
        return key.database() == null ? "all" : Databases.available().stream()
                .filter(database -> database.name().equals(key.database()))
                .map(database -> database.displayName() + " only").findFirst().orElse(key.database());
    }

    public static void main(String[] args) {
        System.out.print(markdown());
    }
}
