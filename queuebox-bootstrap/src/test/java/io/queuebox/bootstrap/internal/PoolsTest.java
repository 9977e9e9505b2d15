package io.queuebox.bootstrap.internal;

import io.queuebox.embed.internal.Pools;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.testkit.services.TestServices;
import java.sql.Connection;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PoolsTest {

    private static QueueBoxConfig configFor(String url, String... more) {
        Map<String, String> values = new java.util.HashMap<>(Map.of("database.url", url, "broker.type", "kafka"));
        for (int i = 0; i < more.length; i += 2) {
            values.put(more[i], more[i + 1]);
        }
        return QueueBoxConfig.of(values);
    }

    @Test
    void deliveryAndCapturePoolsAreSizedFromConfigurationAndReportHikariMetrics() throws Exception {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        QueueBoxConfig config = configFor(TestServices.postgresUrl(), "database.pool.maxSize", "7", "outbox.pipelineDepth", "1",
                "outbox.capture.pool.maxSize", "3");

        try (HikariDataSource delivery = Pools.delivery(config, registry);
             HikariDataSource capture = Pools.capture(config, registry)) {
            DatabaseWait.await(delivery, TestServices.postgresUrl(), Duration.ofSeconds(5));
            try (Connection connection = capture.getConnection()) {
                assertThat(connection.isValid(1)).isTrue();
            }

            assertThat(delivery.getMaximumPoolSize()).isEqualTo(7);
            assertThat(capture.getMaximumPoolSize()).isEqualTo(3);
            assertThat(registry.scrape())
                    .contains("hikaricp_connections_max{pool=\"queuebox-delivery\"} 7.0")
                    .contains("hikaricp_connections_max{pool=\"queuebox-capture\"} 3.0");
        }
    }

    @Test
    void anUnreachableDatabaseFailsAfterTheStartDeadlineWithAMaskedMessage() {
        QueueBoxConfig config = configFor("jdbc:postgresql://127.0.0.1:1/app?password=hunter2",
                "database.pool.connectionTimeoutMs", "250");
        long start = System.nanoTime();

        try (HikariDataSource pool = Pools.delivery(config, null)) {
            assertThatThrownBy(() -> DatabaseWait.await(pool, "jdbc:postgresql://127.0.0.1:1/app?password=hunter2",
                    Duration.ofMillis(1500)))
                    .isInstanceOf(DatabaseUnreachableException.class)
                    .hasMessageContaining("startup.databaseWaitMs")
                    .hasMessageContaining("password=******")
                    .hasMessageNotContaining("hunter2");
        }
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
    }

    @Test
    void captureReadsWhereOutboxCaptureConnectionSaysWhileItsStateAndLockStayWithTheOutbox() throws Exception {
        String other = "qb_capture_elsewhere_" + Long.toHexString(System.nanoTime());
        try (Connection admin = java.sql.DriverManager.getConnection(TestServices.postgresUrl());
             java.sql.Statement statement = admin.createStatement()) {
            statement.execute("CREATE DATABASE " + other);
        }
        try {
            // database.url names the application database; capture is told to read another one (a replica's stand-in).
            QueueBoxConfig config = configFor(TestServices.postgresUrl(), "outbox.capture.connection.database", other);

            assertThat(Pools.captureSourceElsewhere(config)).isTrue();
            try (HikariDataSource delivery = Pools.delivery(config, null);
                 HikariDataSource capture = Pools.capture(config, null);
                 HikariDataSource source = Pools.captureSource(config, null);
                 HikariDataSource captureOperator = Pools.captureOperator(config);
                 HikariDataSource sourceOperator = Pools.captureSourceOperator(config)) {
                String application = currentDatabase(delivery);
                assertThat(application).isNotEqualTo(other);
                assertThat(currentDatabase(capture)).as("state table and lock stay with the outbox").isEqualTo(application);
                assertThat(currentDatabase(captureOperator)).isEqualTo(application);
                assertThat(currentDatabase(source)).as("source checks and WAL monitor where capture reads").isEqualTo(other);
                assertThat(currentDatabase(sourceOperator)).as("capture status asks the same").isEqualTo(other);
            }
            assertThat(Pools.captureSourceElsewhere(configFor(TestServices.postgresUrl()))).isFalse();
        } finally {
            try (Connection admin = java.sql.DriverManager.getConnection(TestServices.postgresUrl());
                 java.sql.Statement statement = admin.createStatement()) {
                statement.execute("DROP DATABASE IF EXISTS " + other + " WITH (FORCE)");
            }
        }
    }

    private static String currentDatabase(HikariDataSource pool) throws java.sql.SQLException {
        try (Connection connection = pool.getConnection(); java.sql.Statement statement = connection.createStatement();
             java.sql.ResultSet rs = statement.executeQuery("SELECT current_database()")) {
            rs.next();
            return rs.getString(1);
        }
    }
}
