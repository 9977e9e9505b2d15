package io.queuebox.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;

/**
 * The production jar (and so the image) carries no demo, no database binaries of any platform, no Kafka broker
 * and no test framework: those live in queuebox-demo.jar.
 */
class RunnableJarContentsIT {

    private static final List<String> NOT_IN_PRODUCTION = List.of("io/queuebox/demo/", "io/zonky/", "org/junit/",
            "org/assertj/", "org/apache/kafka/common/test/", "kafka/server/KafkaRaftServer", "scala/");

    @Test
    void theRunnableJarHasNoDemoNoDatabaseBinariesNoBrokerAndNoTestFramework() throws IOException {
        try (JarFile jar = new JarFile(Path.of("target", "queuebox.jar").toFile())) {
            List<String> names = jar.stream().map(java.util.zip.ZipEntry::getName).toList();

            assertThat(names).contains("io/queuebox/bootstrap/Main.class", "io/queuebox/embed/QueueBox.class");
            assertThat(names).noneMatch(name -> name.endsWith(".txz"));
            assertThat(names).noneMatch(name -> NOT_IN_PRODUCTION.stream().anyMatch(name::startsWith));
        }
    }
}
