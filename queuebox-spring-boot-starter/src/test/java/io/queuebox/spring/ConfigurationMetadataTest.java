package io.queuebox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The IDE metadata is Keys rendered, valid JSON, with the jar's defaults under Spring's names. */
class ConfigurationMetadataTest {

    private static final Path FILE = Path.of("src", "main", "resources", "META-INF", "spring-configuration-metadata.json");

    @Test
    void theMetadataFileIsTheKeysRendered() throws IOException {
        assertThat(Files.readString(FILE))
                .as("spring-configuration-metadata.json is stale: regenerate it with ConfigurationMetadata.main")
                .isEqualTo(ConfigurationMetadata.json());
    }

    @Test
    void itIsValidJsonWithTheDefaultsAndTheChoices() throws IOException {
        JsonNode root = new ObjectMapper().readTree(ConfigurationMetadata.json());

        assertThat(root.path("properties")).anySatisfy(property -> {
            assertThat(property.path("name").asText()).isEqualTo("queuebox.outbox.batch-size");
            assertThat(property.path("defaultValue").asInt()).isEqualTo(100);
        });
        assertThat(root.path("properties")).noneSatisfy(property ->
                assertThat(property.path("name").asText()).startsWith("queuebox.http."));
        assertThat(root.path("hints")).anySatisfy(hint ->
                assertThat(hint.path("name").asText()).isEqualTo("queuebox.outbox.ordering"));
        assertThat(ConfigurationMetadata.kebab("outbox.retry.maxAttempts")).isEqualTo("outbox.retry.max-attempts");
    }
}
