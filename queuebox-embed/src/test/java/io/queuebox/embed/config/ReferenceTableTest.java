package io.queuebox.embed.config;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.jdbc.DatabaseProvider;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class ReferenceTableTest {

    private static final Pattern ROW = Pattern.compile("^\\| `([^`]+)` \\| [^|]* \\| ([^|]+) \\|", Pattern.MULTILINE);

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

    @Test
    void everyKeyOfTheSqlServerPageAppliesOnSqlServerWithTheDefaultTheJarUsesThere() throws IOException {
        String page = Files.readString(Path.of("..", "docs", "reference", "sqlserver.md"));
        String table = page.substring(page.indexOf("<!-- sqlserver keys"), page.indexOf("<!-- end of sqlserver keys -->"));
        DatabaseProvider sqlServer = Databases.available().stream().filter(p -> p.name().equals("sqlserver"))
                .findFirst().orElseThrow();
        List<String> listed = new ArrayList<>();

        Matcher row = ROW.matcher(table);
        while (row.find()) {
            String name = row.group(1);
            listed.add(name);
            ConfigKey key = Keys.find(name).orElse(null);
            assertThat(key).as("sqlserver.md lists %s, which the jar does not know", name).isNotNull();
            assertThat(key.appliesTo(sqlServer.name())).as("sqlserver.md lists %s, which the jar refuses on SQL Server", name)
                    .isTrue();
            assertThat(row.group(2).trim()).as("the default of %s on SQL Server", name)
                    .isEqualTo(ReferenceTable.defaultOn(sqlServer, key));
        }

        assertThat(listed).as("rows of sqlserver.md").hasSizeGreaterThan(10).doesNotHaveDuplicates();
        assertThat(listed).as("every SQL Server-only key is on the SQL Server page").containsAll(Keys.all().stream()
                .filter(key -> sqlServer.name().equals(key.database())).map(ConfigKey::name).toList());
        // The page names the PostgreSQL-only keys as refused on SQL Server.
        Keys.all().stream().filter(key -> key.database() != null && !key.appliesTo(sqlServer.name()))
                .forEach(key -> assertThat(page).contains("`" + key.name() + "`"));
    }
}
