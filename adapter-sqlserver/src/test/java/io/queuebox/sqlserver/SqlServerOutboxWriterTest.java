package io.queuebox.sqlserver;

import static io.queuebox.sqlserver.Events.anEventFor;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxWriteException;
import io.queuebox.ports.OutboxWriter;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.testcontainers.junit.jupiter.Testcontainers;

/** The writers on a JDBC connection and a Jdbi handle, against real SQL Server. Skipped without Docker. */
@Testcontainers(disabledWithoutDocker = true)
class SqlServerOutboxWriterTest {

    private static TestDatabase db;
    private static SqlServerOutboxSettings settings;

    @BeforeAll
    static void schema() {
        db = TestDatabase.create("writer");
        settings = db.settings().build();
        SqlServerOutbox.createSchema(db.dataSource, settings);
        // Running the scripts twice is harmless: every batch checks before it creates.
        SqlServerOutbox.createSchema(db.dataSource, settings);
    }

    @AfterAll
    static void drop() {
        db.close();
    }

    @BeforeEach
    void empty() {
        db.execute("TRUNCATE TABLE " + settings.qualifiedTable());
    }

    @Test
    void aBatchLargerThanOneStatementKeepsListOrderAcrossStatements() throws SQLException {
        List<OutboxEvent> events = new ArrayList<>();
        for (int i = 0; i < EventWriter.ROWS_PER_STATEMENT * 2 + 17; i++) {
            events.add(anEventFor("A"));
        }
        try (Connection connection = db.dataSource.getConnection()) {
            connection.setAutoCommit(false);
            SqlServerOutbox.jdbcWriter(settings).enqueueAll(connection, events);
            connection.commit();
        }
        List<UUID> inSequence = new ArrayList<>();
        try (Connection connection = db.dataSource.getConnection(); Statement statement = connection.createStatement();
             ResultSet rs = statement.executeQuery("SELECT event_id FROM " + settings.qualifiedTable() + " ORDER BY seq")) {
            while (rs.next()) {
                inSequence.add(UUID.fromString(rs.getString(1)));
            }
        }
        assertThat(inSequence).containsExactlyElementsOf(events.stream().map(OutboxEvent::eventId).toList());
    }

    @Test
    void theWriterJoinsTheCallersTransaction() throws SQLException {
        try (Connection connection = db.dataSource.getConnection()) {
            connection.setAutoCommit(false);
            SqlServerOutbox.jdbcWriter(settings).enqueue(connection, anEventFor("A"));
            connection.rollback();
        }
        assertThat(db.count("SELECT count(*) FROM " + settings.qualifiedTable())).isZero();
    }

    @Test
    void theJdbiWriterStoresEveryFieldAsWritten() {
        OutboxEvent event = new OutboxEvent(UUID.randomUUID(), "order", "42", "OrderPlaced", "orders.v1",
                "{\"x\":1}".getBytes(StandardCharsets.UTF_8), "application/json",
                Map.of("traceparent", "00-abc-01", "quote\"d", "line\nbreak \u0000 nul"));
        OutboxWriter<Handle> writer = SqlServerOutbox.jdbiWriter(settings);
        Jdbi.create(db.dataSource).useTransaction(handle -> writer.enqueueAll(handle, List.of(event)));

        var batch = SqlServerOutbox.store(db.dataSource, settings).claim(
                io.queuebox.testkit.fixtures.OutboxFixtures.aClaimRequest().build());
        assertThat(batch.deliveries()).singleElement().satisfies(d -> assertThat(d.event()).isEqualTo(event));
    }

    @Test
    void aMissingTableIsNamedWithHowToCreateIt() throws SQLException {
        SqlServerOutboxSettings missing = SqlServerOutboxSettings.builder().table("no_such_outbox").build();
        try (Connection connection = db.dataSource.getConnection()) {
            connection.setAutoCommit(false);
            assertThatThrownBy(() -> SqlServerOutbox.jdbcWriter(missing).enqueue(connection, anEventFor("A")))
                    .isInstanceOf(OutboxWriteException.class)
                    .hasMessageContaining("dbo.no_such_outbox does not exist")
                    .hasMessageContaining("classpath:db/queuebox/sqlserver");
            connection.rollback();
        }
    }
}
