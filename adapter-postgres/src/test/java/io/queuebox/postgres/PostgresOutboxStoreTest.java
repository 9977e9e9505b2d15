package io.queuebox.postgres;

import io.queuebox.jdbc.testing.ApplicationWrites;
import io.queuebox.jdbc.testing.ReusingDataSource;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.OutboxWriter;
import io.queuebox.testkit.outbox.OutboxStoreContract;
import io.queuebox.testkit.services.TestServices;
import java.sql.Connection;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

/**
 * The store contract against real PostgreSQL, with claims that write a lease on each row (the default);
 * {@link PostgresHeldOutboxStoreTest} runs it with claims that hold their rows by row locks; each relay reaches the table through its own
 * connections, and the out-of-order commit is two real concurrent transactions.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PostgresOutboxStoreTest extends OutboxStoreContract {

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private OutboxWriter<Connection> writer;
    private ReusingDataSource firstRelay;
    private ReusingDataSource secondRelay;
    private ReusingDataSource application;

    @BeforeAll
    void schema() {
        db = TestDatabase.withFreshSchema("contract");
        settings = configure(db.settings()).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        writer = PostgresOutbox.jdbcWriter(settings);
        firstRelay = TestDatabase.reusing(TestServices.postgresUrl(), "queuebox-first-relay");
        secondRelay = TestDatabase.reusing(TestServices.postgresUrl(), "queuebox-second-relay");
        application = TestDatabase.reusing(TestServices.postgresUrl(), "queuebox-application");
    }

    @AfterAll
    void drop() {
        firstRelay.close();
        secondRelay.close();
        application.close();
        db.close();
    }

    /** The store's settings beyond its test schema. */
    PostgresOutboxSettings.Builder configure(PostgresOutboxSettings.Builder builder) {
        return builder;
    }

    private PostgresOutboxSettings settings() {
        return settings;
    }

    @Override
    protected boolean anExpiredClaimKeepsItsToken() {
        return !settings.holdRowLocks();
    }

    @Override
    protected OutboxStore newStoreOnEmptyOutbox() {
        // The last scenario's relays die: the claims they still hold end, as they would with the process.
        db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE state = 'idle in transaction'"
                + " AND application_name IN ('queuebox-first-relay', 'queuebox-second-relay')");
        db.execute("TRUNCATE " + settings().qualifiedTable());
        return PostgresOutbox.store(firstRelay, settings());
    }

    @Override
    protected OutboxStore secondStoreOnSameOutbox() {
        return PostgresOutbox.store(secondRelay, settings());
    }

    @Override
    protected void writeCommitted(List<OutboxEvent> events) {
        new ApplicationWrites(application, writer).writeCommitted(events);
    }

    /** A blank event type: the table allows it, OutboxEvent does not. */
    @Override
    protected Optional<UUID> writeCommittedRowNoEventCanBeMadeOf(String aggregateId) {
        UUID id = UUID.randomUUID();
        db.execute("INSERT INTO " + settings().qualifiedTable() + " (event_id, aggregate_type, aggregate_id,"
                + " event_type, payload) VALUES ('" + id + "', 'order', '" + aggregateId.replace("'", "''")
                + "', ' ', '\\x7b7d')");
        return Optional.of(id);
    }

    @Override
    protected UncommittedWrite beginUncommittedWrite(OutboxEvent event) {
        return new ApplicationWrites(application, writer).beginUncommittedWrite(event);
    }
}
