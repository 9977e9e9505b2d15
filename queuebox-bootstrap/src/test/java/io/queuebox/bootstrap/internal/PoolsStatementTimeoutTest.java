package io.queuebox.bootstrap.internal;

import io.queuebox.embed.internal.Pools;
import io.queuebox.embed.internal.Migrations;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.queuebox.bootstrap.TestDatabase;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.postgres.PostgresOutbox;
import io.queuebox.postgres.PostgresOutboxSettings;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A statement of the relay that waits legitimately (here on the SHARE lock a non-concurrent CREATE INDEX holds
 * while it builds) outlasts {@code database.socketTimeoutMs}. Found by the review of issue 12: the client gave
 * up, but the server went on waiting, each retry added a backend, and when the lock freed every abandoned claim
 * ran and leased rows nobody would publish. The server must give up first, and roll the statement back.
 */
class PoolsStatementTimeoutTest {

    private TestDatabase database;

    @BeforeEach
    void schema() {
        database = TestDatabase.create("stmttimeout");
    }

    @AfterEach
    void drop() throws Exception {
        database.close();
    }

    @Test
    void aClaimGivenUpOnIsCancelledOnTheServerAndLeasesNothingLater() throws Exception {
        QueueBoxConfig config = QueueBoxConfig.of(Map.of("database.url", database.url(), "broker.type", "rabbitmq",
                "database.socketTimeoutMs", "2000"));
        // A leased claim: its UPDATE waits on the SHARE lock. A held claim's choice and row locks do not conflict
        // with SHARE at all (it claims at once; only its outcome would wait, in a transaction the timeout ends).
        PostgresOutboxSettings settings = PostgresOutboxSettings.builder().holdRowLocks(false).build();
        try (HikariDataSource operator = Pools.operator(config)) {
            Migrations.migrate(operator, config);
        }
        database.writeEvents(3);
        ClaimRequest request = new ClaimRequest("relay", 10, Duration.ofMinutes(5), Ordering.PER_AGGREGATE,
                ParkingPolicy.HOLD_AGGREGATE);
        try (HikariDataSource pool = Pools.delivery(config, new SimpleMeterRegistry());
             Connection migration = DriverManager.getConnection(database.url())) {
            OutboxStore relay = PostgresOutbox.store(pool, settings);
            migration.setAutoCommit(false);
            try (Statement statement = migration.createStatement()) {
                statement.execute("LOCK TABLE public.queuebox_outbox IN SHARE MODE");
            }
            for (int attempt = 0; attempt < 3; attempt++) {
                assertThatThrownBy(() -> relay.claim(request)).isInstanceOf(RuntimeException.class);
            }
            assertThat(activeRelayBackends()).as("backends still running claims the relay gave up on").isZero();
            migration.commit();
            Thread.sleep(500); // an abandoned claim still queued would run now
            assertThat(PostgresOutbox.store(pool, settings).claim(request).deliveries())
                    .as("rows no relay received are claimable once the lock is gone, not leased to a dead claim")
                    .hasSize(3);
        }
    }

    private int activeRelayBackends() throws Exception {
        try (Connection connection = DriverManager.getConnection(database.url());
             Statement statement = connection.createStatement();
             ResultSet result = statement.executeQuery("SELECT count(*) FROM pg_stat_activity WHERE application_name"
                     + " = 'queuebox' AND datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()")) {
            result.next();
            return result.getInt(1);
        }
    }

}
