package io.queuebox.bootstrap.internal;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.metrics.micrometer.MicrometerMetricsTrackerFactory;
import io.micrometer.core.instrument.MeterRegistry;
import io.queuebox.bootstrap.config.ConfigKey;
import io.queuebox.bootstrap.config.Keys;
import io.queuebox.bootstrap.config.QueueBoxConfig;

/**
 * The HikariCP pools: one for delivery (claims, outcomes, purge, operator commands) and a small one for
 * capture state and the capture session lock, so a held lock never starves delivery of a connection.
 */
public final class Pools {

    private Pools() {
    }

    /** The delivery pool, {@code database.pool.maxSize} connections, its metrics bound when a registry is given. */
    public static HikariDataSource delivery(QueueBoxConfig config, MeterRegistry registry) {
        return create(config, "queuebox-delivery", config.integer(Keys.DATABASE_POOL_MAX_SIZE),
                Keys.DATABASE_USERNAME, Keys.DATABASE_PASSWORD, registry);
    }

    /** The capture pool, {@code outbox.capture.pool.maxSize} connections, with the capture account when one is set. */
    public static HikariDataSource capture(QueueBoxConfig config, MeterRegistry registry) {
        boolean ownAccount = config.optional(Keys.CAPTURE_USERNAME).isPresent();
        return create(config, "queuebox-capture", config.integer(Keys.CAPTURE_POOL_MAX_SIZE),
                ownAccount ? Keys.CAPTURE_USERNAME : Keys.DATABASE_USERNAME,
                ownAccount ? Keys.CAPTURE_PASSWORD : Keys.DATABASE_PASSWORD, registry);
    }

    /** A pool of two connections for one operator command (migrate, outbox stats, replay). */
    public static HikariDataSource operator(QueueBoxConfig config) {
        // Unbounded: a migration's CREATE INDEX on a large table may rightly take longer than any socket timeout.
        return create(config, "queuebox-operator", 2, Keys.DATABASE_USERNAME, Keys.DATABASE_PASSWORD, null, 0);
    }

    private static HikariDataSource create(QueueBoxConfig config, String name, int maxSize, ConfigKey userKey,
                                           ConfigKey passwordKey, MeterRegistry registry) {
        return create(config, name, maxSize, userKey, passwordKey, registry,
                config.longValue(Keys.DATABASE_SOCKET_TIMEOUT_MS));
    }

    /** Below the socket timeout by a second (at least half of it), so that the server's answer wins the race. */
    static long statementTimeoutMs(long socketTimeoutMs) {
        return Math.max(socketTimeoutMs / 2, socketTimeoutMs - 1000);
    }

    private static HikariDataSource create(QueueBoxConfig config, String name, int maxSize, ConfigKey userKey,
                                           ConfigKey passwordKey, MeterRegistry registry, long socketTimeoutMs) {
        HikariConfig hikari = new HikariConfig();
        hikari.setPoolName(name);
        hikari.setJdbcUrl(config.string(Keys.DATABASE_URL));
        config.optional(userKey).ifPresent(hikari::setUsername);
        config.optional(passwordKey).ifPresent(hikari::setPassword);
        hikari.setMaximumPoolSize(maxSize);
        hikari.setMinimumIdle(Math.min(2, maxSize));
        hikari.setConnectionTimeout(config.longValue(Keys.DATABASE_POOL_CONNECTION_TIMEOUT_MS));
        // The pool must come up while the database is still down: DatabaseWait decides how long to wait.
        hikari.setInitializationFailTimeout(-1);
        hikari.addDataSourceProperty("ApplicationName", "queuebox");
        // A network that drops packets without closing the connection leaves a statement waiting forever
        // (until TCP gives up, hours later): the socket timeout makes the statement fail, so the engine reports
        // the database down and retries on a new connection. A URL parameter of the same name wins.
        if (socketTimeoutMs > 0) {
            hikari.addDataSourceProperty("socketTimeout", Long.toString((socketTimeoutMs + 999) / 1000));
            // The server gives up first and rolls the statement back. Without it a statement the client gave up
            // on (waiting on a lock a migration holds, say) went on waiting on the server, one backend per
            // retry, and ran once the lock freed: a claim nobody would publish leased its rows for a lease length.
            hikari.addDataSourceProperty("options", "-c statement_timeout=" + statementTimeoutMs(socketTimeoutMs));
            hikari.setValidationTimeout(Math.min(hikari.getValidationTimeout(), Math.max(250, socketTimeoutMs)));
        }
        hikari.addDataSourceProperty("tcpKeepAlive", "true");
        if (registry != null) {
            hikari.setMetricsTrackerFactory(new MicrometerMetricsTrackerFactory(registry));
        }
        return new HikariDataSource(hikari);
    }
}
