package io.queuebox.bootstrap.config;

import java.util.stream.Collectors;

/** Renders the key table of docs/reference/configuration.md from {@link Keys}, so the page cannot drift. */
public final class ReferenceTable {

    private ReferenceTable() {
    }

    public static String markdown() {
        String header = "| Key | Type | Default | Environment variable | Description |\n| --- | --- | --- | --- | --- |\n";
        return header + Keys.all().stream().map(key -> "| `" + key.name() + "` | " + typeOf(key) + " | "
                        + defaultOf(key) + " | `" + key.envName() + "` | " + key.doc().replace("|", "\\|") + " |")
                .collect(Collectors.joining("\n")) + "\n";
    }

    private static String typeOf(ConfigKey key) {
        String type = key.allowedDescription();
        return key.secret() ? type + ", secret" : type;
    }

    private static String defaultOf(ConfigKey key) {
        if (key.required()) {
            return "required";
        }
        return key.defaultValue() == null ? "none" : "`" + key.defaultValue() + "`";
    }

    public static void main(String[] args) {
        System.out.print(markdown());
    }
}
