package io.queuebox.embed.config;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import org.yaml.snakeyaml.error.Mark;
import org.yaml.snakeyaml.error.MarkedYAMLException;
import org.yaml.snakeyaml.error.YAMLException;

/**
 * Reads the raw configuration: the YAML file flattened into dotted keys, then the environment variables
 * that override keys (see {@link EnvNames}). Reading never stops at the first problem; everything it
 * cannot read is reported with the rest by {@link ConfigLoader}.
 */
final class ConfigSource {

    /** Variables with this prefix belong to the test harness, not to the service. */
    private static final List<String> FOREIGN_ENV_PREFIXES = List.of("QUEUEBOX_TEST_", "QUEUEBOX_CONFIG");

    private final Map<String, ConfigValue> values = new LinkedHashMap<>();
    private final List<ConfigProblem> problems = new ArrayList<>();
    private EnvReferences references = new EnvReferences(Map.of());
    private boolean fileUnusable;

    Map<String, ConfigValue> values() {
        return values;
    }

    List<ConfigProblem> problems() {
        return problems;
    }

    /**
     * Whether the file was given but could not be used (unreadable, not YAML, not a mapping). Its keys are then
     * unknown, so checking for required keys would only add false problems after the real one.
     */
    boolean fileUnusable() {
        return fileUnusable;
    }

    /**
     * Reads a YAML file. A missing file is a problem only when {@code explicit}: the default file name is
     * optional so that a container can be configured by environment alone.
     */
    ConfigSource readYaml(Path file, boolean explicit) {
        return readYaml(file, explicit, Map.of());
    }

    /** Reads a YAML file, expanding {@code ${NAME}} and {@code ${NAME:-default}} in its values from {@code environment}. */
    ConfigSource readYaml(Path file, boolean explicit, Map<String, String> environment) {
        references = new EnvReferences(environment);
        String origin = "file " + file;
        Object root;
        try (Reader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            root = new Yaml(new SafeConstructor(new LoaderOptions())).load(reader);
        } catch (NoSuchFileException e) {
            if (explicit) {
                unusable(file, "the file does not exist");
            }
            return this;
        } catch (IOException e) {
            unusable(file, "cannot read the file: " + e.getMessage());
            return this;
        } catch (YAMLException e) {
            unusable(file, yamlProblem(e));
            return this;
        }
        if (root == null) {
            return this;
        }
        if (!(root instanceof Map<?, ?> map)) {
            unusable(file, "the top level must be a mapping of keys");
            return this;
        }
        flatten("", map, origin);
        return this;
    }

    private void unusable(Path file, String problem) {
        problems.add(new ConfigProblem("--config", file.toString(), problem));
        fileUnusable = true;
    }

    /**
     * Where the parser stopped and why, in the user's terms (lines and columns count from 1); SnakeYAML's own
     * message repeats the source lines with a caret, which reads badly on one line.
     */
    private static String yamlProblem(YAMLException e) {
        if (!(e instanceof MarkedYAMLException marked) || marked.getProblemMark() == null) {
            return "not valid YAML: " + e.getMessage().lines().map(String::trim).collect(Collectors.joining(" "));
        }
        Mark at = marked.getProblemMark();
        String context = marked.getContext() == null ? ""
                : " (" + marked.getContext() + (marked.getContextMark() == null ? "" : " that starts at line "
                + (marked.getContextMark().getLine() + 1) + ", column " + (marked.getContextMark().getColumn() + 1)) + ")";
        return "not valid YAML at line " + (at.getLine() + 1) + ", column " + (at.getColumn() + 1) + ": "
                + marked.getProblem() + context + "; fix the indentation or quoting there";
    }

    /** Adds key/values as if they were written in a file. */
    ConfigSource readMap(Map<String, String> keyValues, String origin) {
        new java.util.TreeMap<>(keyValues).forEach((key, value) -> values.put(key, new ConfigValue(value, origin)));
        return this;
    }

    private void flatten(String prefix, Map<?, ?> map, String origin) {
        for (Map.Entry<?, ?> entry : map.entrySet()) {
            String key = prefix + entry.getKey();
            Object value = entry.getValue();
            if (value instanceof Map<?, ?> nested) {
                flatten(key + ".", nested, origin);
            } else if (value instanceof List<?> list) {
                // Lists only make sense for broker settings such as bootstrap.servers; they become comma-separated.
                String joined = list.stream().map(String::valueOf).collect(Collectors.joining(","));
                values.put(key, new ConfigValue(references.expand(key, joined, problems), origin));
            } else if (value != null) {
                values.put(key, new ConfigValue(references.expand(key, String.valueOf(value), problems), origin));
            }
        }
    }

    /**
     * Applies the environment: a variable named by {@link EnvNames} for a known key, or for a key already in
     * the file under {@code broker.}, overrides it. Other {@code QUEUEBOX_BROKER_<TYPE>_<SETTING>} variables add the broker setting
     * {@code broker.<type>.<setting>} with {@code _} read as {@code .} and lower-cased. Any other
     * {@code QUEUEBOX_} variable is a problem, with the closest known name.
     */
    ConfigSource readEnvironment(Map<String, String> environment) {
        Map<String, String> keyByEnv = new LinkedHashMap<>();
        for (ConfigKey key : Keys.all()) {
            keyByEnv.put(key.envName(), key.name());
        }
        for (String fileKey : values.keySet()) {
            if (Keys.isBrokerSetting(fileKey)) {
                keyByEnv.putIfAbsent(EnvNames.forKey(fileKey), fileKey);
            }
        }
        environment.entrySet().stream()
                .filter(e -> e.getKey().startsWith(EnvNames.PREFIX))
                // A variable the file reads (${QUEUEBOX_DB_PASSWORD}) is the file's, not a setting of its own.
                .filter(e -> !references.referenced().contains(e.getKey()) || keyByEnv.containsKey(e.getKey()))
                .filter(e -> FOREIGN_ENV_PREFIXES.stream().noneMatch(e.getKey()::startsWith))
                .sorted(Map.Entry.comparingByKey())
                .forEach(e -> applyEnv(e.getKey(), e.getValue(), keyByEnv));
        return this;
    }

    private void applyEnv(String name, String value, Map<String, String> keyByEnv) {
        String origin = "env " + name;
        String key = keyByEnv.get(name);
        if (key != null) {
            values.put(key, new ConfigValue(value, origin));
            return;
        }
        String brokerPrefix = EnvNames.PREFIX + "BROKER_";
        if (name.startsWith(brokerPrefix) && name.indexOf('_', brokerPrefix.length()) > brokerPrefix.length()) {
            String rest = name.substring(brokerPrefix.length()).toLowerCase(Locale.ROOT);
            int split = rest.indexOf('_');
            String brokerKey = Keys.BROKER_PREFIX + rest.substring(0, split) + "." + rest.substring(split + 1).replace('_', '.');
            if (Keys.find(brokerKey).isEmpty()) {
                values.put(brokerKey, new ConfigValue(value, origin));
                return;
            }
        }
        String suggestion = Suggestions.closest(name, keyByEnv.keySet()).map(s -> "; did you mean " + s + "?").orElse("");
        // No value, as for an unknown key: a misspelt secret's name need not look secret.
        problems.add(new ConfigProblem(name, null,
                "unknown environment variable (a QUEUEBOX_ variable must name a configuration key)" + suggestion));
    }
}
