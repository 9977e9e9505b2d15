package io.queuebox.bootstrap.internal;

import io.queuebox.bootstrap.config.Keys;
import io.queuebox.bootstrap.config.QueueBoxConfig;
import io.queuebox.bootstrap.config.Databases;
import java.util.Map;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.output.MigrateResult;

/**
 * Applies the database adapter's shipped scripts with Flyway, into QueueBox's own history table
 * {@value #HISTORY_TABLE} in the outbox schema, so it never mixes with an application's Flyway history.
 */
public final class Migrations {

    public static final String HISTORY_TABLE = "queuebox_schema_history";

    private Migrations() {
    }

    public static MigrateResult migrate(DataSource dataSource, QueueBoxConfig config) {
        String schema = config.string(Keys.OUTBOX_SCHEMA);
        return Flyway.configure(Migrations.class.getClassLoader())
                .dataSource(dataSource)
                .locations("classpath:" + Databases.of(config).schemaLocation())
                .table(HISTORY_TABLE)
                .schemas(schema)
                .defaultSchema(schema)
                .createSchemas(true)
                // An existing schema with application tables in it is normal: start the history at 0.
                .baselineOnMigrate(true)
                .baselineVersion("0")
                .placeholders(Map.of("queuebox_schema", schema, "queuebox_table", config.string(Keys.OUTBOX_TABLE)))
                .load()
                .migrate();
    }
}
