package io.queuebox.embed.config;

import java.util.List;
import java.util.stream.Collectors;

/** The configuration has problems; all of them are listed. Messages never hold a secret. */
public final class ConfigException extends RuntimeException {

    private final transient List<ConfigProblem> problems;

    public ConfigException(List<ConfigProblem> problems) {
        super(problems.size() + " configuration problem(s):\n" + problems.stream()
                .map(p -> "  - " + p).collect(Collectors.joining("\n")));
        this.problems = List.copyOf(problems);
    }

    public List<ConfigProblem> problems() {
        return problems;
    }
}
