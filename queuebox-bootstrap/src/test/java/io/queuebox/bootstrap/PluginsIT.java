package io.queuebox.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.bootstrap.plugin.EchoPublisherProvider;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The recipes of docs/how-to/custom-broker-adapter.md, run as an operator runs them: a custom adapter in a jar of
 * its own is found by broker.type from the plug-in folder beside queuebox.jar, from the folder named by
 * -Dqueuebox.plugins.dir, and with java -cp; without it, the name is refused.
 */
class PluginsIT {

    private static final Path JAR = Path.of("target", "queuebox.jar").toAbsolutePath();

    @TempDir
    Path dir;
    private Path plugins;

    @BeforeEach
    void packTheAdapter() throws IOException {
        plugins = Files.createDirectories(dir.resolve("plugins"));
        Path classes = Path.of("target", "test-classes");
        String packagePath = EchoPublisherProvider.class.getPackageName().replace('.', '/');
        try (JarOutputStream jar = new JarOutputStream(Files.newOutputStream(plugins.resolve("echo-adapter.jar")));
             Stream<Path> files = Files.list(classes.resolve(packagePath))) {
            for (Path file : files.toList()) {
                jar.putNextEntry(new JarEntry(packagePath + "/" + file.getFileName()));
                jar.write(Files.readAllBytes(file));
                jar.closeEntry();
            }
            jar.putNextEntry(new JarEntry("META-INF/services/io.queuebox.ports.MessagePublisherProvider"));
            jar.write((EchoPublisherProvider.class.getName() + "\n").getBytes(StandardCharsets.UTF_8));
            jar.closeEntry();
        }
    }

    @Test
    void anAdapterInThePluginFolderBesideTheJarIsFoundByItsName() throws Exception {
        Path installed = Files.copy(JAR, dir.resolve("queuebox.jar"), StandardCopyOption.REPLACE_EXISTING);

        Result result = run(List.of("-jar", installed.toString()));

        assertThat(result.exitCode()).as(result.output()).isZero();
        assertThat(result.output()).contains("Broker providers: echo, kafka, rabbitmq", "broker.type = echo");
    }

    @Test
    void aPluginFolderNamedBySystemPropertyWorksWithTheBuiltJar() throws Exception {
        Result result = run(List.of("-Dqueuebox.plugins.dir=" + plugins, "-jar", JAR.toString()));

        assertThat(result.exitCode()).as(result.output()).isZero();
    }

    @Test
    void theClassPathRecipeWorksWithoutAFolder() throws Exception {
        Result result = run(List.of("-cp", JAR + java.io.File.pathSeparator + plugins.resolve("echo-adapter.jar"),
                "io.queuebox.bootstrap.Main"));

        assertThat(result.exitCode()).as(result.output()).isZero();
    }

    @Test
    void withoutTheAdapterTheNameIsRefusedListingTheProviders() throws Exception {
        Result result = run(List.of("-jar", JAR.toString()));

        assertThat(result.exitCode()).as(result.output()).isEqualTo(2);
        assertThat(result.output()).contains("broker.type", "echo", "allowed: kafka, rabbitmq");
    }

    private Result run(List<String> javaArguments) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(javaArguments);
        command.addAll(List.of("config", "check"));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).directory(dir.toFile());
        Map<String, String> env = builder.environment();
        env.keySet().removeIf(name -> name.startsWith("QUEUEBOX_") && !name.startsWith("QUEUEBOX_TEST_"));
        env.put("QUEUEBOX_DATABASE_URL", "jdbc:postgresql://127.0.0.1:5432/test");
        env.put("QUEUEBOX_BROKER_TYPE", "echo");
        Process process = builder.start();
        try (OutputStream stdin = process.getOutputStream()) {
            // config check reads nothing from standard input.
        }
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        return new Result(process.waitFor(), output);
    }

    private record Result(int exitCode, String output) {
    }
}
