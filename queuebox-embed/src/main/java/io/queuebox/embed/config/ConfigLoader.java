package io.queuebox.embed.config;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Loads the configuration: defaults, then the YAML file, then the environment, then secrets read from
 * files; validates the result and reports every problem at once.
 *
 * <p>Secrets from files: {@code database.passwordFile} (and {@code outbox.capture.connection.passwordFile})
 * name a file holding the password; a secret key may also be given as {@code file:/path}. The file's
 * content, without its trailing line break, is the value.
 */
public final class ConfigLoader {

    /** The file read when {@code --config} is not given; it may be absent. */
    public static final Path DEFAULT_FILE = Path.of("queuebox.yaml");

    private static final String FILE_REFERENCE = "file:";

    private Path file = DEFAULT_FILE;
    private boolean explicitFile;
    private Map<String, String> environment = Map.of();
    private Map<String, String> values = Map.of();
    private Set<String> brokerNames = Set.of();

    /** The YAML file; a file named explicitly must exist. */
    public ConfigLoader file(Path file, boolean explicit) {
        this.file = Objects.requireNonNull(file, "file");
        this.explicitFile = explicit;
        return this;
    }

    /** Reads no file (for embedding and tests). */
    public ConfigLoader withoutFile() {
        this.file = null;
        return this;
    }

    /** Key/values applied after the file and before the environment, as if written in the file. */
    public ConfigLoader values(Map<String, String> values) {
        this.values = Map.copyOf(values);
        return this;
    }

    /** The environment (usually {@code System.getenv()}); only {@code QUEUEBOX_} variables are read. */
    public ConfigLoader environment(Map<String, String> environment) {
        this.environment = Map.copyOf(environment);
        return this;
    }

    /** The broker provider names {@code broker.type} may take; empty accepts any. */
    public ConfigLoader brokerNames(Set<String> brokerNames) {
        this.brokerNames = Set.copyOf(brokerNames);
        return this;
    }

    /**
     * @throws ConfigException listing every problem
     */
    public QueueBoxConfig load() {
        ConfigSource source = new ConfigSource();
        if (file != null) {
            source.readYaml(file, explicitFile, environment);
        }
        source.readMap(values, "embedded").readEnvironment(environment);
        List<ConfigProblem> problems = new ArrayList<>(source.problems());
        if (source.fileUnusable()) {
            throw new ConfigException(problems);
        }
        Map<String, ConfigValue> given = new LinkedHashMap<>(source.values());
        resolveSecretFiles(given, problems);
        problems.addAll(new ConfigValidator(brokerNames).validate(given));
        if (!problems.isEmpty()) {
            throw new ConfigException(problems);
        }
        // Valid, so some provider accepts the URL; the defaults are those of its database.
        io.queuebox.jdbc.DatabaseProvider database = Databases.forUrl(given.get(Keys.DATABASE_URL.name()).value().trim())
                .orElseThrow();
        Map<String, ConfigValue> effective = new LinkedHashMap<>();
        for (ConfigKey key : Keys.all()) {
            if (!key.appliesTo(database.name())) {
                continue;
            }
            if (key.databaseDefault()) {
                effective.put(key.name(), new ConfigValue(Databases.defaultValue(database, key),
                        "default for " + database.displayName()));
            } else if (key.defaultValue() != null) {
                effective.put(key.name(), new ConfigValue(key.defaultValue(), "default"));
            }
        }
        given.forEach((name, value) -> effective.put(name, new ConfigValue(value.value().trim(), value.origin())));
        return new QueueBoxConfig(effective);
    }

    private static void resolveSecretFiles(Map<String, ConfigValue> given, List<ConfigProblem> problems) {
        for (Map.Entry<String, ConfigValue> entry : List.copyOf(given.entrySet())) {
            String value = entry.getValue().value();
            if (Keys.isSecret(entry.getKey()) && value.startsWith(FILE_REFERENCE)) {
                Path path = Path.of(value.substring(FILE_REFERENCE.length()).trim());
                readSecret(entry.getKey(), path, problems).ifPresent(secret ->
                        given.put(entry.getKey(), new ConfigValue(secret, entry.getValue().origin() + " via " + value)));
            }
        }
        fromPasswordFile(given, problems, Keys.DATABASE_PASSWORD_FILE, Keys.DATABASE_PASSWORD);
        fromPasswordFile(given, problems, Keys.CAPTURE_PASSWORD_FILE, Keys.CAPTURE_PASSWORD);
    }

    private static void fromPasswordFile(Map<String, ConfigValue> given, List<ConfigProblem> problems,
                                         ConfigKey fileKey, ConfigKey secretKey) {
        ConfigValue fileValue = given.get(fileKey.name());
        if (fileValue == null || fileValue.value().isBlank()) {
            return;
        }
        readSecret(fileKey.name(), Path.of(fileValue.value().trim()), problems).ifPresent(secret ->
                given.put(secretKey.name(), new ConfigValue(secret, fileKey.name() + " (" + fileValue.origin() + ")")));
    }

    private static java.util.Optional<String> readSecret(String key, Path path, List<ConfigProblem> problems) {
        try {
            String content = Files.readString(path, StandardCharsets.UTF_8);
            return java.util.Optional.of(content.replaceFirst("\\R\\z", ""));
        } catch (IOException | RuntimeException e) {
            problems.add(new ConfigProblem(key, "file:" + path, "cannot read the secret file ("
                    + e.getClass().getSimpleName() + "); allowed: a readable file holding the secret"));
            return java.util.Optional.empty();
        }
    }
}
