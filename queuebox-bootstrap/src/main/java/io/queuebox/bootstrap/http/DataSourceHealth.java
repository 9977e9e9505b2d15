package io.queuebox.bootstrap.http;

import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.HikariPoolMXBean;
import io.queuebox.bootstrap.logs.ShortCause;
import io.queuebox.ports.Health;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import javax.sql.DataSource;

/**
 * The database component: a pooled connection that answers {@code isValid} within two seconds. The whole
 * check, waiting for a pooled connection included, answers within {@link #BOUND}: a database behind a network
 * that went silent must make the probe say DOWN, not make the probe time out.
 */
public final class DataSourceHealth implements Supplier<Health> {

    static final Duration BOUND = Duration.ofMillis(2500);

    private final DataSource dataSource;
    private final ExecutorService checker = Executors.newSingleThreadExecutor(runnable -> {
        Thread thread = new Thread(runnable, "queuebox-database-health");
        thread.setDaemon(true);
        return thread;
    });
    private Future<Health> running;

    public DataSourceHealth(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    @Override
    public Health get() {
        Future<Health> check;
        synchronized (this) {
            // Probes that come while a check still hangs share it instead of queueing more behind it.
            if (running == null || running.isDone()) {
                running = checker.submit(this::check);
            }
            check = running;
        }
        try {
            return check.get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            return Health.down("no answer from the database within " + BOUND.toMillis() + " ms").withDetails(poolDetails());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Health.down("interrupted");
        } catch (ExecutionException e) {
            return Health.down("check failed: " + ShortCause.of(e.getCause()));
        }
    }

    private Health check() {
        try (Connection connection = dataSource.getConnection()) {
            Health health = connection.isValid(2) ? Health.up("connection valid") : Health.down("connection not valid");
            return health.withDetails(poolDetails());
        } catch (SQLException e) {
            return Health.down("no connection: " + ShortCause.of(e)).withDetails(poolDetails());
        }
    }

    private Map<String, Object> poolDetails() {
        Map<String, Object> details = new LinkedHashMap<>();
        if (dataSource instanceof HikariDataSource hikari && hikari.getHikariPoolMXBean() != null) {
            HikariPoolMXBean pool = hikari.getHikariPoolMXBean();
            details.put("active", pool.getActiveConnections());
            details.put("idle", pool.getIdleConnections());
            details.put("waiting", pool.getThreadsAwaitingConnection());
        }
        return details;
    }
}
