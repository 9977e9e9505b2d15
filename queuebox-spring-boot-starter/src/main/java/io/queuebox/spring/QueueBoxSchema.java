package io.queuebox.spring;

import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.embed.internal.Migrations;
import javax.sql.DataSource;
import org.flywaydb.core.api.output.MigrateResult;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * QueueBox's schema, migrated with the application's Flyway library into QueueBox's own history table
 * ({@value Migrations#HISTORY_TABLE}), so it never mixes with the application's migrations. Loaded only when
 * Flyway is on the class path.
 */
public final class QueueBoxSchema {

    private static final Logger LOG = LoggerFactory.getLogger(QueueBoxSchema.class);

    private final int applied;

    private QueueBoxSchema(int applied) {
        this.applied = applied;
    }

    static QueueBoxSchema migrate(DataSource dataSource, QueueBoxConfig config) {
        MigrateResult result = Migrations.migrate(dataSource, config);
        LOG.info("QueueBox schema: {} migration(s) applied, now at version {}", result.migrationsExecuted,
                result.targetSchemaVersion);
        return new QueueBoxSchema(result.migrationsExecuted);
    }

    /** How many scripts this start applied. */
    public int applied() {
        return applied;
    }

    /** Nothing to do: being created was the migration; the relay asks for this bean so it starts after it. */
    void check() {
    }
}
