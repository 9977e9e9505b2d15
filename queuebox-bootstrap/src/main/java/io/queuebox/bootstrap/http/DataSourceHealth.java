package io.queuebox.bootstrap.http;

import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.HikariPoolMXBean;
import io.queuebox.bootstrap.logs.ShortCause;
import io.queuebox.ports.Health;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import javax.sql.DataSource;

/** The database component: a pooled connection that answers {@code isValid} within two seconds. */
public final class DataSourceHealth implements Supplier<Health> {

    private final DataSource dataSource;

    public DataSourceHealth(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    @Override
    public Health get() {
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
