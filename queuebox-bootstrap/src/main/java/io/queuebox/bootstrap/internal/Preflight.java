package io.queuebox.bootstrap.internal;

import io.queuebox.embed.internal.Settings;
import io.queuebox.embed.internal.Publishers;

import io.queuebox.embed.config.ConfigProblem;
import io.queuebox.embed.config.Keys;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.ports.CaptureSettings;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What {@code config check} finds beyond the keys themselves, without touching the database or the broker:
 * the broker provider's verdict on its settings (the check {@code run} makes when it creates the publisher)
 * and, with capture on, whether the state directory can be written.
 */
public final class Preflight {

    private Preflight() {
    }

    public static List<ConfigProblem> problems(QueueBoxConfig config) {
        List<ConfigProblem> problems = new ArrayList<>(
                Publishers.problems(config.string(Keys.BROKER_TYPE), config.brokerSettings()));
        CaptureSettings capture = Settings.capture(config);
        if (capture.active()) {
            StateDirectoryCheck.problem(Path.of(capture.stateDirectory())).ifPresent(problems::add);
        }
        return problems;
    }
}
