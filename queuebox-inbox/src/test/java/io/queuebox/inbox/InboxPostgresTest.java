package io.queuebox.inbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.queuebox.ports.InboxKey;
import io.queuebox.ports.InboxOutcome;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** What JdbcInbox adds to the contract, on the real PostgreSQL: its own transactions, purgeAll, refusals. */
class InboxPostgresTest {

    private static InboxTestDatabase database;
    private static String effects;

    @BeforeAll
    static void createSchema() {
        database = InboxTestDatabase.withFreshSchema("inbox_jdbc");
        effects = database.createEffectTable("invoices");
    }

    @AfterAll
    static void dropSchema() {
        if (database != null) {
            database.close();
        }
    }

    @Test
    void processInNewTransactionCommitsTheEntryWithTheBusinessRowAndReportsTheRedeliveryAsADuplicate() throws Exception {
        InboxKey key = new InboxKey("billing", UUID.randomUUID());

        InboxOutcome first = database.inbox.processInNewTransaction(database.dataSource, key, tx -> invoice(tx, key));
        InboxOutcome again = database.inbox.processInNewTransaction(database.dataSource, key, tx -> invoice(tx, key));

        assertThat(first).isEqualTo(InboxOutcome.PROCESSED);
        assertThat(again).isEqualTo(InboxOutcome.DUPLICATE);
        assertThat(invoicesFor(key)).isEqualTo(1);
    }

    @Test
    void aHandlerThatFailsAfterItsBusinessWriteLeavesNeitherTheRowNorTheEntry() throws Exception {
        InboxKey key = new InboxKey("billing", UUID.randomUUID());

        assertThatThrownBy(() -> database.inbox.processInNewTransaction(database.dataSource, key, tx -> {
            invoice(tx, key);
            throw new IllegalStateException("crashed before the commit");
        })).hasMessage("crashed before the commit");
        assertThat(invoicesFor(key)).isZero();

        assertThat(database.inbox.processInNewTransaction(database.dataSource, key, tx -> invoice(tx, key)))
                .isEqualTo(InboxOutcome.PROCESSED);
        assertThat(invoicesFor(key)).isEqualTo(1);
    }

    @Test
    void aConnectionInAutoCommitModeIsRefusedBeforeAnythingIsRecorded() throws Exception {
        InboxKey key = new InboxKey("billing", UUID.randomUUID());
        try (Connection connection = database.dataSource.getConnection()) {
            assertThatThrownBy(() -> database.inbox.process(connection, key, tx -> invoice(tx, key)))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("auto-commit")
                    .hasMessageContaining(database.schema + ".queuebox_inbox");
        }
        assertThat(database.count("SELECT count(*) FROM " + database.inboxTable()
                + " WHERE event_id = '" + key.eventId() + "'")).isZero();
    }

    @Test
    void aMissingTableIsAnErrorNamingIt() {
        JdbcInbox elsewhere = JdbcInbox.create(InboxSettings.builder(InboxDatabase.POSTGRESQL)
                .schema(database.schema).table("no_such_inbox").build());
        InboxKey key = new InboxKey("billing", UUID.randomUUID());

        assertThatThrownBy(() -> elsewhere.processInNewTransaction(database.dataSource, key, tx -> { }))
                .isInstanceOf(InboxDatabaseException.class)
                .hasMessageContaining(database.schema + ".no_such_inbox")
                .hasMessageContaining(key.eventId().toString())
                .hasMessageContaining("does not exist");
    }

    @Test
    void purgeAllDeletesEveryOldEntryInBoundedTransactionsAndKeepsRecentOnes() throws Exception {
        JdbcInbox inbox = JdbcInbox.create(InboxSettings.builder(InboxDatabase.POSTGRESQL)
                .schema(database.schema).table("purged_inbox").build());
        inbox.createSchema(database.dataSource);
        String table = "\"" + database.schema + "\".\"purged_inbox\"";
        for (int i = 0; i < 7; i++) {
            inbox.processInNewTransaction(database.dataSource, new InboxKey("billing", UUID.randomUUID()), tx -> { });
        }
        database.execute("UPDATE " + table + " SET processed_at = now() - interval '8 days'");
        InboxKey recent = new InboxKey("billing", UUID.randomUUID());
        inbox.processInNewTransaction(database.dataSource, recent, tx -> { });

        assertThat(inbox.purgeAll(database.dataSource, Duration.ofDays(7), 3)).isEqualTo(7);
        assertThat(database.count("SELECT count(*) FROM " + table)).isEqualTo(1);
        assertThat(inbox.processInNewTransaction(database.dataSource, recent, tx -> { })).isEqualTo(InboxOutcome.DUPLICATE);
    }

    @Test
    void theShippedScriptRunsAgainOnAnExistingTableWithoutChangingIt() throws Exception {
        InboxKey key = new InboxKey("billing", UUID.randomUUID());
        database.inbox.processInNewTransaction(database.dataSource, key, tx -> { });

        database.inbox.createSchema(database.dataSource);

        assertThat(database.inbox.processInNewTransaction(database.dataSource, key, tx -> { }))
                .isEqualTo(InboxOutcome.DUPLICATE);
    }

    private static void invoice(Connection transaction, InboxKey key) throws Exception {
        try (PreparedStatement insert = transaction.prepareStatement(
                "INSERT INTO " + effects + " (event_id, aggregate_id) VALUES (?, 'order-1')")) {
            insert.setObject(1, key.eventId());
            insert.executeUpdate();
        }
    }

    private static long invoicesFor(InboxKey key) {
        return database.count("SELECT count(*) FROM " + effects + " WHERE event_id = '" + key.eventId() + "'");
    }
}
