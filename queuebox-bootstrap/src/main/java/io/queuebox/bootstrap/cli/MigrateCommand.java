package io.queuebox.bootstrap.cli;

import com.zaxxer.hikari.HikariDataSource;
import io.queuebox.embed.config.Databases;
import io.queuebox.embed.config.Keys;
import io.queuebox.embed.internal.Settings;
import io.queuebox.jdbc.DatabaseProvider;
import picocli.CommandLine.Option;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.bootstrap.internal.DatabaseRights;
import io.queuebox.bootstrap.internal.DatabaseWait;
import io.queuebox.bootstrap.internal.Logging;
import io.queuebox.embed.internal.Migrations;
import io.queuebox.embed.internal.Pools;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import org.flywaydb.core.api.output.MigrateResult;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

@Command(name = "migrate", mixinStandardHelpOptions = true,
        description = "Creates or upgrades the outbox table and QueueBox's tables with Flyway; the history goes to"
                + " QueueBox's own table queuebox_schema_history, never the application's.")
final class MigrateCommand implements Callable<Integer> {

    private final CliContext context;

    @Spec
    CommandSpec spec;

    @Option(names = "--dry-run", description = "Prints the scripts migrate would apply, placeholders filled in for the"
            + " configured database, schema and table, without connecting to the database.")
    boolean dryRun;

    MigrateCommand(CliContext context) {
        this.context = context;
    }

    @Override
    public Integer call() {
        QueueBoxConfig config = context.loadConfig();
        if (dryRun) {
            return printScripts(config);
        }
        Logging.configure(config);
        try (HikariDataSource dataSource = Pools.operator(config)) {
            DatabaseWait.await(dataSource, config.string(Keys.DATABASE_URL), config.millis(Keys.STARTUP_DATABASE_WAIT_MS));
            DatabaseRights.requireForMigration(Databases.of(config).open(dataSource, Settings.outbox(config)));
            MigrateResult result = Migrations.migrate(dataSource, config);
            PrintWriter out = spec.commandLine().getOut();
            out.printf("Schema %s: %d migration(s) applied, now at version %s (history in %s.%s).%n",
                    config.string(Keys.OUTBOX_SCHEMA), result.migrationsExecuted,
                    result.targetSchemaVersion == null ? "unchanged" : result.targetSchemaVersion,
                    config.string(Keys.OUTBOX_SCHEMA), Migrations.HISTORY_TABLE);
            if (Databases.of(config).notifiesInserts()) {
                out.printf("Insert notifications: %s (outbox.wake.mode %s).%n", Migrations.notifies(config) ? "on" : "off",
                        config.string(Keys.WAKE_MODE));
            }
            out.flush();
            return ExitCodes.OK;
        }
    }

    private int printScripts(QueueBoxConfig config) {
        DatabaseProvider database = Databases.of(config);
        PrintWriter out = spec.commandLine().getOut();
        out.printf("-- QueueBox schema for %s, %s.%s (classpath:%s); migrate records it in %s.%s%n",
                database.displayName(), config.string(Keys.OUTBOX_SCHEMA), config.string(Keys.OUTBOX_TABLE),
                database.schemaLocation(), config.string(Keys.OUTBOX_SCHEMA), Migrations.HISTORY_TABLE);
        database.renderSchemaScripts(Settings.outbox(config)).forEach(out::println);
        if (database.notifiesInserts()) {
            out.printf("-- then migrate switches the outbox's insert notifications %s (outbox.wake.mode %s)%n",
                    Migrations.notifies(config) ? "on" : "off", config.string(Keys.WAKE_MODE));
        }
        out.flush();
        return ExitCodes.OK;
    }
}
