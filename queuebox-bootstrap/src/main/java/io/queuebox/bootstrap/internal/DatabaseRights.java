package io.queuebox.bootstrap.internal;

import io.queuebox.embed.config.ConfigException;
import io.queuebox.embed.config.ConfigProblem;
import io.queuebox.embed.config.Keys;
import io.queuebox.jdbc.OutboxDatabase;
import java.util.List;

/**
 * Refuses to start with a database account that lacks a right the command needs, naming the right and the
 * GRANT; without this check delivery would start and fail every claim with "permission denied".
 */
public final class DatabaseRights {

    private DatabaseRights() {
    }

    /** @throws ConfigException listing what {@code run} lacks on the outbox table */
    public static void requireForDelivery(OutboxDatabase database) {
        require(database.missingDeliveryRights());
    }

    /** @throws ConfigException listing what {@code migrate} lacks to create the schema or its tables */
    public static void requireForMigration(OutboxDatabase database) {
        require(database.missingMigrationRights());
    }

    private static void require(List<String> missing) {
        if (!missing.isEmpty()) {
            throw new ConfigException(missing.stream()
                    .map(problem -> new ConfigProblem(Keys.DATABASE_USERNAME.name(), null, problem)).toList());
        }
    }
}
