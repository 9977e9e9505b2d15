package io.queuebox.bootstrap.config;

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

    Map<String, ConfigValue> values() {
        return values;
    }

    List<ConfigProblem> problems() {
        return problems;
    }

    /**
     * Reads a YAML file. A missing file is a problem only when {@code explicit}: the default file name is
     * optional so that a container can be configured by environment alone.
     */
    ConfigSource readYaml(Path file, boolean explicit) {
        String origin = "file " + file;
        Object root;
        try (Reader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            root = new Yaml(new SafeConstructor(new LoaderOptions())).load(reader);
        } catch (NoSuchFileException e) {
            if (explicit) {
                problems.add(new ConfigProblem("--config", file.toString(), "the file does not exist"));
            }
            return this;
        } catch (IOException e) {
            problems.add(new ConfigProblem("--config", file.toString(), "cannot read the file: " + e.getMessage()));
            return this;
        } catch (YAMLException e) {
            problems.add(new ConfigProblem("--config", file.toString(), "not valid YAML: "
                    + e.getMessage().lines().collect(Collectors.joining(" "))));
            return this;
        }
        if (root == null) {
            return this;
        }
        if (!(root instanceof Map<?, ?> map)) {
            problems.add(new ConfigProblem("--config", file.toString(), "the top level must be a mapping of keys"));
            return this;
        }
        flatten("", map, origin);
        return this;
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
                values.put(key, new ConfigValue(list.stream().map(String::valueOf).collect(Collectors.joining(",")), origin));
            } else if (value != null) {
                values.put(key, new ConfigValue(String.valueOf(value), origin));
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
        problems.add(new ConfigProblem(name, Masking.looksSecret(name) ? Masking.MASK : value,
                "unknown environment variable (a QUEUEBOX_ variable must name a configuration key)" + suggestion));
    }
}
