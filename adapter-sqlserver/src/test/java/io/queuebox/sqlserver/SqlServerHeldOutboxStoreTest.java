package io.queuebox.sqlserver;

import org.testcontainers.junit.jupiter.Testcontainers;

/**
 * The store contract again, for a store whose claims hold their rows by update locks in a transaction kept open
 * until their outcomes are written ({@code outbox.holdRowLocks}), instead of writing a lease on each row. Skipped
 * without Docker: it has never run against a real SQL Server.
 */
@Testcontainers(disabledWithoutDocker = true)
class SqlServerHeldOutboxStoreTest extends SqlServerOutboxStoreTest {

    @Override
    SqlServerOutboxSettings.Builder configure(SqlServerOutboxSettings.Builder builder) {
        return builder.holdRowLocks(true);
    }
}
