package io.queuebox.sqlserver;

import io.queuebox.jdbc.testing.ApplicationWrites;
import io.queuebox.jdbc.testing.ReusingDataSource;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.OutboxWriter;
import io.queuebox.testkit.outbox.OutboxStoreContract;
import java.sql.Connection;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.testcontainers.junit.jupiter.Testcontainers;

/**
 * The store contract against real SQL Server, unchanged, with claims that write a lease on each row (the default;
 * {@link SqlServerHeldOutboxStoreTest} runs it with claims that hold their rows by update locks); each relay
 * reaches the table through its own connections, and the out-of-order commit is two real concurrent transactions. Skipped without Docker.
 */
@Testcontainers(disabledWithoutDocker = true)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SqlServerOutboxStoreTest extends OutboxStoreContract {

    private TestDatabase db;
    private SqlServerOutboxSettings settings;
    private OutboxWriter<Connection> writer;
    private ReusingDataSource firstRelay;
    private ReusingDataSource secondRelay;
    private ReusingDataSource application;

    @BeforeAll
    void schema() {
        db = TestDatabase.create("contract");
        settings = configure(db.settings().schema("outbox")).build();
        SqlServerOutbox.createSchema(db.dataSource, settings);
        writer = SqlServerOutbox.jdbcWriter(settings);
        firstRelay = TestDatabase.reusing(db.url, "queuebox-first-relay");
        secondRelay = TestDatabase.reusing(db.url, "queuebox-second-relay");
        application = TestDatabase.reusing(db.url, "queuebox-application");
    }

    @AfterAll
    void drop() {
        firstRelay.close();
        secondRelay.close();
        application.close();
        db.close();
    }

    /** The store's settings beyond its test schema. */
    SqlServerOutboxSettings.Builder configure(SqlServerOutboxSettings.Builder builder) {
        return builder;
    }

    @Override
    protected OutboxStore newStoreOnEmptyOutbox() {
        // The last scenario's relays die: the claims they still hold end, as they would with the process (a held
        // claim's update locks would also keep TRUNCATE waiting).
        HeldClaim.abortAll(settings.qualifiedTable());
        db.execute("TRUNCATE TABLE " + settings.qualifiedTable());
        return SqlServerOutbox.store(firstRelay, settings);
    }

    @Override
    protected boolean anExpiredClaimKeepsItsToken() {
        return !settings.holdRowLocks();
    }

    @Override
    protected OutboxStore secondStoreOnSameOutbox() {
        return SqlServerOutbox.store(secondRelay, settings);
    }

    @Override
    protected void writeCommitted(List<OutboxEvent> events) {
        new ApplicationWrites(application, writer).writeCommitted(events);
    }

    @Override
    protected UncommittedWrite beginUncommittedWrite(OutboxEvent event) {
        return new ApplicationWrites(application, writer).beginUncommittedWrite(event);
    }
}
