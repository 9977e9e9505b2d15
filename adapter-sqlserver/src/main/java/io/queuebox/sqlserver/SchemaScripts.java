package io.queuebox.sqlserver;

import io.queuebox.jdbc.FlywayScripts;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/** Renders the shipped Flyway scripts with their placeholders filled in, and runs them without Flyway. */
final class SchemaScripts {

    static final String LOCATION = "db/queuebox/sqlserver";
    static final List<String> SCRIPTS = List.of("V1__queuebox_outbox.sql");

    /** Flyway's batch separator for SQL Server: GO alone on its line. */
    private static final Pattern BATCH_SEPARATOR = Pattern.compile("(?im)^\\s*GO\\s*$");
    private static final FlywayScripts FLYWAY_SCRIPTS =
            new FlywayScripts(SchemaScripts.class.getClassLoader(), LOCATION, SCRIPTS, SchemaScripts::batches);

    private SchemaScripts() {
    }

    static String render(String script, SqlServerOutboxSettings settings) {
        return FLYWAY_SCRIPTS.render(script, settings.schema(), settings.table());
    }

    /** The batches of a rendered script, without the GO separators and without empty batches. */
    static List<String> batches(String renderedScript) {
        List<String> batches = new ArrayList<>();
        for (String batch : BATCH_SEPARATOR.split(renderedScript)) {
            if (!withoutComments(batch).isBlank()) {
                batches.add(batch.strip());
            }
        }
        return batches;
    }

    static void apply(DataSource dataSource, SqlServerOutboxSettings settings) {
        FLYWAY_SCRIPTS.apply(dataSource, settings.schema(), settings.table());
    }

    private static String withoutComments(String batch) {
        return batch.replaceAll("(?m)--.*$", "");
    }
}
