package io.queuebox.embed.internal;

import io.queuebox.embed.config.Keys;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.embed.config.Databases;
import io.queuebox.jdbc.DatabaseProvider;
import java.util.Map;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.output.MigrateResult;

/**
 * Applies the database adapter's shipped scripts with Flyway, into QueueBox's own history table
 * {@value #HISTORY_TABLE} in the outbox schema, so it never mixes with an application's Flyway history; then
 * matches the insert notifications to {@code outbox.wake.mode}.
 */
public final class Migrations {

    public static final String HISTORY_TABLE = "queuebox_schema_history";

    private Migrations() {
    }

    /**
     * Applies the scripts, then switches the outbox's insert notifications on when {@code outbox.wake.mode} is
     * {@code notify} and off when it is {@code poll}, on a database that has them (the scripts leave them off:
     * they cost the writers' commits).
     */
    public static MigrateResult migrate(DataSource dataSource, QueueBoxConfig config) {
        MigrateResult result = applyScripts(dataSource, config);
        DatabaseProvider provider = Databases.of(config);
        if (provider.notifiesInserts()) {
            provider.open(dataSource, Databases.outboxTable(config)).insertNotifications(notifies(config));
        }
        return result;
    }

    /** Whether {@code outbox.wake.mode} asks for insert notifications. */
    public static boolean notifies(QueueBoxConfig config) {
        return config.string(Keys.WAKE_MODE).equals("notify");
    }

    private static MigrateResult applyScripts(DataSource dataSource, QueueBoxConfig config) {
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
