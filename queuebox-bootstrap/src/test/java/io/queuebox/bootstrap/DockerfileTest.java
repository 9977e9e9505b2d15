package io.queuebox.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The image the product's page describes, checked without a Docker engine: the file parses into known
 * instructions, builds in stages from the Maven build, runs as the non-root user {@code queuebox}, owns
 * and declares the capture volume, and checks readiness.
 */
class DockerfileTest {

    private static final Set<String> INSTRUCTIONS = Set.of("FROM", "RUN", "COPY", "ADD", "ENV", "ARG", "USER",
            "WORKDIR", "VOLUME", "EXPOSE", "HEALTHCHECK", "ENTRYPOINT", "CMD", "LABEL", "SHELL", "STOPSIGNAL");

    @Test
    void theImageBuildsInStagesAndRunsAsQueueboxWithTheCaptureVolumeAndAHealthCheck() throws IOException {
        List<String[]> instructions = parse(Path.of("..", "Dockerfile"));

        assertThat(instructions).allSatisfy(i -> assertThat(INSTRUCTIONS).as("instruction").contains(i[0]));
        List<String> froms = values(instructions, "FROM");
        assertThat(froms).hasSize(2);
        assertThat(froms.get(0)).endsWith("AS build");
        assertThat(values(instructions, "RUN").get(0)).contains("./mvnw").contains("package");
        assertThat(values(instructions, "COPY")).anySatisfy(copy -> assertThat(copy)
                .startsWith("--from=build").contains("queuebox-bootstrap/target/queuebox.jar"));

        String runtimeSetup = values(instructions, "RUN").get(1);
        assertThat(runtimeSetup).contains("useradd --system").contains("queuebox")
                .contains("mkdir -p /var/lib/queuebox/capture").contains("chown -R queuebox:queuebox /var/lib/queuebox");
        assertThat(values(instructions, "VOLUME")).containsExactly("[\"/var/lib/queuebox/capture\"]");
        List<String> users = values(instructions, "USER");
        assertThat(users).containsExactly("queuebox");
        assertThat(indexOf(instructions, "USER")).as("USER comes after the root-only setup")
                .isGreaterThan(lastIndexOf(instructions, "RUN"));
        assertThat(values(instructions, "HEALTHCHECK")).singleElement().asString().contains("/health/ready");
        assertThat(values(instructions, "ENTRYPOINT")).singleElement().asString().contains("-jar");
    }

    @Test
    void aContainerConfiguredByEnvironmentAloneStartsAndItsHealthCheckFollowsThePort() throws IOException {
        List<String[]> instructions = parse(Path.of("..", "Dockerfile"));

        // The jar reads ./queuebox.yaml only when present (QueueBoxJarIT runs it configured by environment alone).
        assertThat(values(instructions, "CMD")).singleElement().asString().doesNotContain("--config")
                .isEqualTo("[\"run\"]");
        assertThat(values(instructions, "WORKDIR")).last().isEqualTo("/etc/queuebox");
        assertThat(values(instructions, "ENV")).contains("QUEUEBOX_HTTP_PORT=8080");
        assertThat(values(instructions, "HEALTHCHECK")).singleElement().asString()
                .contains("${QUEUEBOX_HTTP_PORT}").doesNotContain(":8080");
        assertThat(values(instructions, "EXPOSE")).containsExactly("8080");
        // The plug-in folder beside the jar: custom broker adapters (PluginsIT runs the recipe).
        assertThat(values(instructions, "RUN").get(1)).contains("/opt/queuebox/plugins");
    }

    @Test
    void theImageBuildsOnlyTheProductionJarWithACachedRepositoryFromACleanContext() throws IOException {
        List<String[]> instructions = parse(Path.of("..", "Dockerfile"));

        String build = values(instructions, "RUN").get(0);
        assertThat(build).contains("--mount=type=cache,target=/root/.m2").contains("-pl queuebox-bootstrap -am")
                .doesNotContain("queuebox-demo").doesNotContain("queuebox-bench");
        List<String> ignored = Files.readAllLines(Path.of("..", ".dockerignore")).stream()
                .map(String::strip).filter(line -> !line.isEmpty() && !line.startsWith("#")).toList();
        assertThat(ignored).contains(".git", "**/target");
    }

    private static List<String[]> parse(Path dockerfile) throws IOException {
        List<String[]> instructions = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        for (String line : Files.readAllLines(dockerfile)) {
            String trimmed = line.strip();
            if (current.isEmpty() && (trimmed.isEmpty() || trimmed.startsWith("#"))) {
                continue;
            }
            if (trimmed.endsWith("\\")) {
                current.append(trimmed, 0, trimmed.length() - 1).append(' ');
                continue;
            }
            current.append(trimmed);
            String text = current.toString().strip();
            current.setLength(0);
            int space = text.indexOf(' ');
            assertThat(space).as("instruction with arguments: " + text).isPositive();
            instructions.add(new String[] {text.substring(0, space).toUpperCase(Locale.ROOT), text.substring(space + 1).strip()});
        }
        assertThat(current).as("no dangling line continuation").isEmpty();
        return instructions;
    }

    private static List<String> values(List<String[]> instructions, String name) {
        return instructions.stream().filter(i -> i[0].equals(name)).map(i -> i[1]).toList();
    }

    private static int indexOf(List<String[]> instructions, String name) {
        for (int i = 0; i < instructions.size(); i++) {
            if (instructions.get(i)[0].equals(name)) {
                return i;
            }
        }
        return -1;
    }

    private static int lastIndexOf(List<String[]> instructions, String name) {
        int last = -1;
        for (int i = 0; i < instructions.size(); i++) {
            if (instructions.get(i)[0].equals(name)) {
                last = i;
            }
        }
        return last;
    }
}
