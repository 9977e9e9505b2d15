package io.queuebox.embed.config;

import io.queuebox.jdbc.DatabaseProvider;
import io.queuebox.jdbc.OutboxTable;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.ServiceLoader;

/**
 * The databases the jar can deliver from: every {@link DatabaseProvider} on the class path (the adapters list
 * theirs in {@code META-INF/services}), chosen by {@code database.url}. The bootstrap reaches a database only
 * through here, so it names no concrete adapter.
 */
public final class Databases {

    private static final List<DatabaseProvider> AVAILABLE = load();

    private Databases() {
    }

    private static List<DatabaseProvider> load() {
        List<DatabaseProvider> providers = new ArrayList<>();
        ServiceLoader.load(DatabaseProvider.class, Databases.class.getClassLoader()).forEach(providers::add);
        providers.sort(Comparator.comparing(DatabaseProvider::name));
        return List.copyOf(providers);
    }

    /** Every provider on the class path, by name. */
    public static List<DatabaseProvider> available() {
        return AVAILABLE;
    }

    /** The provider that accepts the URL, if any. */
    public static Optional<DatabaseProvider> forUrl(String jdbcUrl) {
        return AVAILABLE.stream().filter(provider -> provider.accepts(jdbcUrl)).findFirst();
    }

    /** The provider of a validated configuration's {@code database.url}. */
    public static DatabaseProvider of(QueueBoxConfig config) {
        String url = config.string(Keys.DATABASE_URL);
        return forUrl(url).orElseThrow(() -> new IllegalStateException("no database provider accepts database.url"));
    }

    /** The outbox table as configured. */
    public static OutboxTable outboxTable(QueueBoxConfig config) {
        return new OutboxTable(config.string(Keys.OUTBOX_SCHEMA), config.string(Keys.OUTBOX_TABLE),
                config.bool(Keys.OUTBOX_DELETE_ON_SEND),
                config.optional(Keys.OUTBOX_MAX_PAYLOAD_BYTES).map(v -> OptionalInt.of(Integer.parseInt(v)))
                        .orElse(OptionalInt.empty()),
                config.bool(Keys.OUTBOX_HOLD_ROW_LOCKS));
    }

    /** The default of a {@link ConfigKey#databaseDefault()} key on this database. */
    public static String defaultValue(DatabaseProvider provider, ConfigKey key) {
        if (key.equals(Keys.OUTBOX_SCHEMA)) {
            return provider.defaultSchema();
        }
        if (key.equals(Keys.OUTBOX_HOLD_ROW_LOCKS)) {
            return Boolean.toString(provider.holdsRowLocksByDefault());
        }
        return key.defaultValue();
    }
}
