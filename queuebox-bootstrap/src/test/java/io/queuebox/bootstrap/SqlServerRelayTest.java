package io.queuebox.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.embed.internal.Migrations;
import io.queuebox.embed.internal.Pools;
import io.queuebox.bootstrap.internal.Relay;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.sqlserver.SqlServerOutbox;
import io.queuebox.sqlserver.SqlServerOutboxSettings;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.testcontainers.containers.MSSQLServerContainer;
import org.testcontainers.junit.jupiter.Testcontainers;
import org.testcontainers.utility.DockerImageName;

/**
 * The jar's wiring on a real SQL Server: migrate with Flyway's SQL Server support, then the relay delivers
 * from dbo.queuebox_outbox to RabbitMQ. Needs Docker; skipped without it (reported as skipped, never passed).
 */
@Testcontainers(disabledWithoutDocker = true)
class SqlServerRelayTest {

    private static MSSQLServerContainer<?> server;
    private static RabbitQueue rabbit;
    private static String url;

    @BeforeAll
    static void services() throws Exception {
        server = new MSSQLServerContainer<>(DockerImageName.parse("mcr.microsoft.com/mssql/server:2022-latest"))
                .acceptLicense();
        server.start();
        String serverUrl = server.getJdbcUrl() + ";user=" + server.getUsername() + ";password=" + server.getPassword()
                + ";encrypt=false;trustServerCertificate=true";
        try (Connection connection = DriverManager.getConnection(serverUrl); Statement statement = connection.createStatement()) {
            statement.execute("CREATE DATABASE qb_relay");
        }
        url = serverUrl + ";databaseName=qb_relay";
        rabbit = new RabbitQueue();
    }

    @AfterAll
    static void stop() throws Exception {
        if (rabbit != null) {
            rabbit.close();
        }
        if (server != null) {
            server.stop();
        }
    }

    @Test
    void migrateThenRunDeliversFromSqlServer() throws Exception {
        QueueBoxConfig config = QueueBoxConfig.of(RelayTest.configFor(url, rabbit));
        try (HikariDataSource pool = Pools.operator(config)) {
            assertThat(Migrations.migrate(pool, config).migrationsExecuted).isEqualTo(1);
            List<OutboxEvent> events = new ArrayList<>();
            try (Connection connection = pool.getConnection()) {
                connection.setAutoCommit(false);
                for (int i = 0; i < 12; i++) {
                    events.add(OutboxEvent.of("order", "o-" + (i % 3), "OrderPlaced", "{}".getBytes()));
                }
                SqlServerOutbox.jdbcWriter(SqlServerOutboxSettings.defaults()).enqueueAll(connection, events);
                connection.commit();
            }

            try (Relay relay = Relay.start(config)) {
                await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(rabbit.drain())
                        .containsAll(events.stream().map(e -> e.eventId().toString()).toList()));
                assertThat(relay.isRunning()).isTrue();
            }
            assertThat(SqlServerOutbox.store(pool, SqlServerOutboxSettings.defaults()).stats().pending()).isZero();
        }
    }
}
