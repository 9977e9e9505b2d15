package io.queuebox.embed.internal;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.metrics.micrometer.MicrometerMetricsTrackerFactory;
import io.micrometer.core.instrument.MeterRegistry;
import io.queuebox.embed.config.Databases;
import java.util.Optional;
import io.queuebox.embed.config.Keys;
import io.queuebox.embed.config.QueueBoxConfig;

/**
 * The HikariCP pools: one for delivery (claims, outcomes, purge, operator commands) and a small one for
 * capture state and the capture session lock, so a held lock never starves delivery of a connection.
 */
public final class Pools {

    private Pools() {
    }

    /** The delivery pool, {@code database.pool.maxSize} connections, its metrics bound when a registry is given. */
    public static HikariDataSource delivery(QueueBoxConfig config, MeterRegistry registry) {
        return create(config, "queuebox-delivery", config.string(Keys.DATABASE_URL),
                config.integer(Keys.DATABASE_POOL_MAX_SIZE), config.optional(Keys.DATABASE_USERNAME),
                config.optional(Keys.DATABASE_PASSWORD), registry, config.longValue(Keys.DATABASE_SOCKET_TIMEOUT_MS));
    }

    /**
     * The capture pool, {@code outbox.capture.pool.maxSize} connections, on {@code database.url} with the capture
     * account: the capture state table and the session lock live with the outbox, where every relay of the
     * table meets them and where they can be written (a replica in {@code outbox.capture.connection.*} could not).
     */
    public static HikariDataSource capture(QueueBoxConfig config, MeterRegistry registry) {
        return captureAccountPool(config, "queuebox-capture", config.string(Keys.DATABASE_URL),
                config.integer(Keys.CAPTURE_POOL_MAX_SIZE), registry, config.longValue(Keys.DATABASE_SOCKET_TIMEOUT_MS));
    }

    /**
     * Two connections at the capture location ({@code outbox.capture.connection.*}), for what must ask the
     * database capture reads: the source checks (slot and publication, or CDC and the Agent) and the
     * retained-WAL monitor. Only needed when that location differs from {@code database.url}.
     */
    public static HikariDataSource captureSource(QueueBoxConfig config, MeterRegistry registry) {
        return captureAccountPool(config, "queuebox-capture-source", Settings.captureUrl(config), 2, registry,
                config.longValue(Keys.DATABASE_SOCKET_TIMEOUT_MS));
    }

    /** A pool of two connections for one operator command (migrate, outbox stats, replay). */
    public static HikariDataSource operator(QueueBoxConfig config) {
        // Unbounded: a migration's CREATE INDEX on a large table may rightly take longer than any socket timeout.
        return create(config, "queuebox-operator", config.string(Keys.DATABASE_URL), 2,
                config.optional(Keys.DATABASE_USERNAME), config.optional(Keys.DATABASE_PASSWORD), null, 0);
    }

    /** {@link #capture} for one capture operator command (status, reset). */
    public static HikariDataSource captureOperator(QueueBoxConfig config) {
        return captureAccountPool(config, "queuebox-capture-operator", config.string(Keys.DATABASE_URL), 2, null, 0);
    }

    /** {@link #captureSource} for one capture operator command. */
    public static HikariDataSource captureSourceOperator(QueueBoxConfig config) {
        return captureAccountPool(config, "queuebox-capture-source-operator", Settings.captureUrl(config), 2, null, 0);
    }

    /** Whether the capture location differs from {@code database.url}, so that the source needs pools of its own. */
    public static boolean captureSourceElsewhere(QueueBoxConfig config) {
        return !Settings.captureUrl(config).equals(config.string(Keys.DATABASE_URL));
    }

    private static HikariDataSource captureAccountPool(QueueBoxConfig config, String name, String url, int maxSize,
                                                       MeterRegistry registry, long socketTimeoutMs) {
        Settings.Account account = Settings.captureAccount(config);
        // An account of capture's own must not lose to the one written in database.url.
        String target = config.optional(Keys.CAPTURE_USERNAME).isPresent() ? Databases.of(config).withoutAccount(url) : url;
        return create(config, name, target, maxSize, Optional.of(account.username()).filter(u -> !u.isEmpty()),
                Optional.of(account.password()).filter(p -> !p.isEmpty()), registry, socketTimeoutMs);
    }

    private static HikariDataSource create(QueueBoxConfig config, String name, String url, int maxSize,
                                           Optional<String> username, Optional<String> password,
                                           MeterRegistry registry, long socketTimeoutMs) {
        HikariConfig hikari = new HikariConfig();
        hikari.setPoolName(name);
        hikari.setJdbcUrl(url);
        username.ifPresent(hikari::setUsername);
        password.ifPresent(hikari::setPassword);
        hikari.setMaximumPoolSize(maxSize);
        hikari.setMinimumIdle(Math.min(2, maxSize));
        hikari.setConnectionTimeout(config.longValue(Keys.DATABASE_POOL_CONNECTION_TIMEOUT_MS));
        // The pool must come up while the database is still down: DatabaseWait decides how long to wait.
        hikari.setInitializationFailTimeout(-1);
        // A network that drops packets without closing the connection leaves a statement waiting forever
        // (until TCP gives up, hours later): the database's driver properties bound each statement, so the
        // engine reports the database down and retries on a new connection. A URL parameter of the same name wins.
        Databases.of(config).connectionProperties(socketTimeoutMs, "queuebox").forEach(hikari::addDataSourceProperty);
        if (socketTimeoutMs > 0) {
            hikari.setValidationTimeout(Math.min(hikari.getValidationTimeout(), Math.max(250, socketTimeoutMs)));
        }
        if (registry != null) {
            hikari.setMetricsTrackerFactory(new MicrometerMetricsTrackerFactory(registry));
        }
        return new HikariDataSource(hikari);
    }
}
