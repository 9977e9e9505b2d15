package io.queuebox.bootstrap.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class ReferenceTableTest {

    @Test
    void theReferencePageListsEveryKeyExactlyAsTheRegistryDefinesIt() throws IOException {
        String page = Files.readString(Path.of("..", "docs", "reference", "configuration.md"));
        int start = page.indexOf("| Key | Type |");
        int end = page.indexOf("<!-- end of generated table -->");

        assertThat(start).as("table start in configuration.md").isPositive();
        assertThat(page.substring(start, end))
                .as("docs/reference/configuration.md is stale: regenerate it with ReferenceTable.main")
                .isEqualTo(ReferenceTable.markdown());
    }
}
