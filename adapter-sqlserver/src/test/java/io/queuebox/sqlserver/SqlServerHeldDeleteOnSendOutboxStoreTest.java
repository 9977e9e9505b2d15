package io.queuebox.sqlserver;

import org.testcontainers.junit.jupiter.Testcontainers;

/** The store contract for held claims whose store deletes rows when the broker confirmed them. Skipped without Docker. */
@Testcontainers(disabledWithoutDocker = true)
class SqlServerHeldDeleteOnSendOutboxStoreTest extends SqlServerOutboxStoreTest {

    @Override
    SqlServerOutboxSettings.Builder configure(SqlServerOutboxSettings.Builder builder) {
        return builder.holdRowLocks(true).deleteOnSend(true);
    }

    @Override
    protected boolean deletesSentRows() {
        return true;
    }
}
