package io.queuebox.postgres;

/**
 * The store contract again, for a store whose claims hold their rows by row locks in a transaction kept open until
 * their outcomes are written ({@code outbox.holdRowLocks}), instead of writing a lease on each row.
 */
class PostgresHeldOutboxStoreTest extends PostgresOutboxStoreTest {

    @Override
    PostgresOutboxSettings.Builder configure(PostgresOutboxSettings.Builder builder) {
        return builder.holdRowLocks(true);
    }
}
