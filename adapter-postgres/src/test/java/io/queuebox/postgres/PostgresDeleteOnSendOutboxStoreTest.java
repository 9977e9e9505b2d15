package io.queuebox.postgres;

/** The store contract again, for a store that deletes rows when the broker confirmed them. */
class PostgresDeleteOnSendOutboxStoreTest extends PostgresOutboxStoreTest {

    @Override
    PostgresOutboxSettings.Builder configure(PostgresOutboxSettings.Builder builder) {
        return builder.deleteOnSend(true);
    }

    @Override
    protected boolean deletesSentRows() {
        return true;
    }
}
