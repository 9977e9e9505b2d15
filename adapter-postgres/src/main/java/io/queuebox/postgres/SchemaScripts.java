package io.queuebox.postgres;

import io.queuebox.jdbc.FlywayScripts;
import java.util.List;
import javax.sql.DataSource;

/** Renders the shipped Flyway scripts with their placeholders filled in, for use without Flyway. */
final class SchemaScripts {

    static final String LOCATION = "db/queuebox/postgres";
    static final List<String> SCRIPTS = List.of("V1__queuebox_outbox.sql", "V2__queuebox_aggregate_order.sql",
            "V3__queuebox_lease_token_index.sql", "V4__queuebox_insert_notify.sql",
            "V5__queuebox_insert_notify_names_rows.sql");

    // PostgreSQL runs a whole script as one statement.
    private static final FlywayScripts FLYWAY_SCRIPTS =
            new FlywayScripts(SchemaScripts.class.getClassLoader(), LOCATION, SCRIPTS, List::of);

    private SchemaScripts() {
    }

    static String render(String script, PostgresOutboxSettings settings) {
        return FLYWAY_SCRIPTS.render(script, settings.schema(), settings.table());
    }

    static void apply(DataSource dataSource, PostgresOutboxSettings settings) {
        FLYWAY_SCRIPTS.apply(dataSource, settings.schema(), settings.table());
    }
}
