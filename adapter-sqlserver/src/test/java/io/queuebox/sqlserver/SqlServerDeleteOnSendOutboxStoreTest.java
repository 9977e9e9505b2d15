package io.queuebox.sqlserver;

import org.testcontainers.junit.jupiter.Testcontainers;

/** The store contract again, for a store that deletes rows when the broker confirmed them. Skipped without Docker. */
@Testcontainers(disabledWithoutDocker = true)
class SqlServerDeleteOnSendOutboxStoreTest extends SqlServerOutboxStoreTest {

    @Override
    SqlServerOutboxSettings.Builder configure(SqlServerOutboxSettings.Builder builder) {
        return builder.deleteOnSend(true);
    }

    @Override
    protected boolean deletesSentRows() {
        return true;
    }
}
