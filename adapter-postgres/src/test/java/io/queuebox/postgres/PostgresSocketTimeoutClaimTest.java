package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.assertj.core.api.SoftAssertions;

import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.testkit.services.TestServices;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Review of issue 12 (database.socketTimeoutMs): the relay's pools set pgjdbc's socketTimeout and nothing on the
 * server side. A claim that legitimately waits (here: on the SHARE lock that a non-concurrent CREATE INDEX, such as
 * migration V3 run by 'queuebox migrate' on a large table, holds for minutes) is given up by the client, but the
 * server never hears of it: the backend keeps waiting in the lock queue, each retry of each worker adds one more,
 * and when the lock is released every abandoned claim runs and commits a lease that nobody will publish.
 */
class PostgresSocketTimeoutClaimTest {

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private String applicationName;
    private OutboxStore relayWithSocketTimeout;

    @BeforeEach
    void schema() {
        db = TestDatabase.withFreshSchema("sockettimeout");
        settings = db.settings().build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        applicationName = "qb-review-socket-timeout-" + UUID.randomUUID().toString().substring(0, 8);
        PGSimpleDataSource relayPool = new PGSimpleDataSource();
        relayPool.setURL(TestServices.postgresUrl());
        relayPool.setApplicationName(applicationName);
        relayPool.setSocketTimeout(1); // what Pools sets from database.socketTimeoutMs, scaled down for the test
        relayWithSocketTimeout = PostgresOutbox.store(relayPool, settings);
    }

    @AfterEach
    void drop() {
        // Only the backends this test opened, by their unique application name.
        db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '" + applicationName + "'");
        db.close();
    }

    private void insert(String aggregateId) {
        db.execute("INSERT INTO " + settings.qualifiedTable() + " (event_id, aggregate_type, aggregate_id, event_type,"
                + " payload) VALUES ('" + UUID.randomUUID() + "', 'order', '" + aggregateId + "', 'OrderPlaced', '\\x7b7d')");
    }

    private ClaimRequest request() {
        return new ClaimRequest("relay", 10, Duration.ofMinutes(5), Ordering.PER_AGGREGATE, ParkingPolicy.HOLD_AGGREGATE);
    }

    private int backendsStillRunningAbandonedStatements() throws SQLException {
        try (Connection connection = db.dataSource.getConnection(); Statement statement = connection.createStatement();
             ResultSet rs = statement.executeQuery("SELECT count(*) FROM pg_stat_activity WHERE application_name = '"
                     + applicationName + "' AND state = 'active'")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    @Test
    void aClaimGivenUpByTheSocketTimeoutDoesNotKeepRunningOnTheServerAndLeasesNothingLater() throws Exception {
        SoftAssertions soft = new SoftAssertions();
        insert("a");
        insert("b");
        insert("c");
        try (Connection migration = db.dataSource.getConnection()) {
            migration.setAutoCommit(false);
            try (Statement statement = migration.createStatement()) {
                // The lock CREATE INDEX (not CONCURRENTLY) holds while it builds.
                statement.execute("LOCK TABLE " + settings.qualifiedTable() + " IN SHARE MODE");
            }
            // Three workers' attempts while the index builds (each one times out on the client).
            for (int attempt = 0; attempt < 3; attempt++) {
                assertThatThrownBy(() -> relayWithSocketTimeout.claim(request())).isInstanceOf(RuntimeException.class);
            }
            soft.assertThat(backendsStillRunningAbandonedStatements())
                    .as("backends still executing claims the relay gave up on (each holds a server connection slot)")
                    .isZero();
            migration.commit();
        }
        Thread.sleep(500); // the abandoned claims, if still queued, run now
        OutboxStore healthyRelay = PostgresOutbox.store(db.dataSource, settings);
        soft.assertThat(healthyRelay.claim(request()).deliveries())
                .as("rows that no relay ever received must be claimable once the lock is gone, not leased to a dead claim")
                .hasSize(3);
        soft.assertAll();
    }
}
