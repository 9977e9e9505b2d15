package io.queuebox.bootstrap.cli;

import io.queuebox.embed.config.ConfigLoader;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.ports.MessagePublisherProvider;
import java.nio.file.Path;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeSet;

/** What every command shares: the environment, the chosen configuration file, the broker providers on the class path. */
final class CliContext {

    private final Map<String, String> environment;
    private Path configFile;

    CliContext(Map<String, String> environment) {
        this.environment = Map.copyOf(environment);
    }

    void configFile(Path file) {
        this.configFile = file;
    }

    Path configFileOrDefault() {
        return configFile != null ? configFile : ConfigLoader.DEFAULT_FILE;
    }

    /** @throws io.queuebox.embed.config.ConfigException listing every problem */
    QueueBoxConfig loadConfig() {
        return new ConfigLoader()
                .file(configFileOrDefault(), configFile != null)
                .environment(environment)
                .brokerNames(brokerNames())
                .load();
    }

    static Set<String> brokerNames() {
        Set<String> names = new TreeSet<>();
        ServiceLoader.load(MessagePublisherProvider.class).forEach(provider -> names.add(provider.name()));
        return names;
    }
}
