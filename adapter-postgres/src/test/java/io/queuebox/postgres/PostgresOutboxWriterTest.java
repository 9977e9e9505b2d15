package io.queuebox.postgres;

import static io.queuebox.postgres.Events.anEventFor;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.ClaimedDelivery;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.OutboxWriteException;
import io.queuebox.ports.OutboxWriter;
import io.queuebox.ports.ParkingPolicy;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class PostgresOutboxWriterTest {

    private static TestDatabase db;
    private static PostgresOutboxSettings settings;
    private static OutboxWriter<Connection> writer;
    private static OutboxStore store;

    @BeforeAll
    static void schema() {
        db = TestDatabase.withFreshSchema("writer");
        settings = db.settings().maxPayloadBytes(1000).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        writer = PostgresOutbox.jdbcWriter(settings);
        store = PostgresOutbox.store(db.dataSource, settings);
    }

    @AfterAll
    static void drop() {
        db.close();
    }

    @BeforeEach
    void empty() {
        db.execute("TRUNCATE " + settings.qualifiedTable());
    }

    @Test
    void eventsExistExactlyWhenTheCallersTransactionCommits() throws SQLException {
        try (Connection connection = db.dataSource.getConnection()) {
            connection.setAutoCommit(false);
            writer.enqueue(connection, anEventFor("rolled-back"));
            assertThat(connection.getAutoCommit()).isFalse();
            assertThat(connection.isClosed()).isFalse();
            connection.rollback();
            writer.enqueue(connection, anEventFor("committed"));
            assertThat(rowCount()).as("not visible before the caller commits").isZero();
            connection.commit();
        }
        assertThat(aggregateIdsInSequenceOrder()).containsExactly("committed");
    }

    @Test
    void aBatchKeepsListOrderAndEveryFieldRoundTrips() throws SQLException {
        OutboxEvent first = new OutboxEvent(UUID.randomUUID(), "order", "42", "OrderPlaced", "orders.v1",
                new byte[] {0, 1, 2, (byte) 255}, "application/octet-stream",
                Map.of("traceparent", "00-abc-def-01", "quote\"and\\slash", "line\nbreak \u00e9"));
        List<OutboxEvent> events = new ArrayList<>(List.of(first));
        IntStream.range(0, 200).forEach(i -> events.add(anEventFor("42")));
        events.add(anEventFor("43").withHeaders(Map.of()));
        try (Connection connection = db.dataSource.getConnection()) {
            connection.setAutoCommit(false);
            writer.enqueueAll(connection, events);
            connection.commit();
        }

        ClaimBatch batch = store.claim(new ClaimRequest("writer-test", 1000, Duration.ofMinutes(1),
                Ordering.PER_AGGREGATE, ParkingPolicy.HOLD_AGGREGATE));

        assertThat(batch.deliveries()).extracting(ClaimedDelivery::event).containsExactlyElementsOf(events);
        assertThat(batch.deliveries().get(0).event().payload()).containsExactly(0, 1, 2, 255);
    }

    @Test
    void aBatchOf500IsOneStatement() throws SQLException {
        List<OutboxEvent> events = new ArrayList<>();
        IntStream.range(0, 500).forEach(i -> events.add(anEventFor("aggregate-" + (i % 7))));
        AtomicInteger executed = new AtomicInteger();
        try (Connection real = db.dataSource.getConnection()) {
            real.setAutoCommit(false);
            writer.enqueueAll(countingExecutions(real, executed), events);
            real.commit();
        }
        assertThat(executed).hasValue(1);
        assertThat(rowCount()).isEqualTo(500);
    }

    /** The connection, except that every statement it prepares counts its executions. */
    private static Connection countingExecutions(Connection real, AtomicInteger executed) {
        return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
                (proxy, method, args) -> {
                    Object result = JdbcSpy.invoke(real, method, args);
                    if (result instanceof PreparedStatement statement) {
                        return Proxy.newProxyInstance(PreparedStatement.class.getClassLoader(),
                                new Class<?>[] {PreparedStatement.class}, (p, m, a) -> {
                                    if (m.getName().startsWith("execute")) {
                                        executed.incrementAndGet();
                                    }
                                    return JdbcSpy.invoke(statement, m, a);
                                });
                    }
                    return result;
                });
    }

    @Test
    void theJdbiWriterJoinsTheHandlesTransaction() {
        OutboxWriter<Handle> jdbiWriter = PostgresOutbox.jdbiWriter(settings);
        Jdbi jdbi = Jdbi.create(db.dataSource);
        jdbi.useTransaction(handle -> {
            jdbiWriter.enqueueAll(handle, List.of(anEventFor("a"), anEventFor("b")));
            handle.rollback();
        });
        jdbi.useTransaction(handle -> jdbiWriter.enqueue(handle, anEventFor("c")));
        assertThat(aggregateIdsInSequenceOrder()).containsExactly("c");
    }

    @Test
    void aMissingTableIsReportedWithItsNameAndHowToCreateIt() throws SQLException {
        PostgresOutboxSettings missing = db.settings().table("no_such_outbox").build();
        try (Connection connection = db.dataSource.getConnection()) {
            assertThatThrownBy(() -> PostgresOutbox.jdbcWriter(missing).enqueue(connection, anEventFor("x")))
                    .isInstanceOf(OutboxWriteException.class)
                    .hasMessageContaining(db.schema + ".no_such_outbox does not exist")
                    .hasMessageContaining("classpath:db/queuebox/postgres")
                    .hasMessageContaining("PostgresOutbox.createSchema");
        }
    }

    @Test
    void anOversizePayloadIsRefusedNamingTheEventAndItsSize() throws SQLException {
        OutboxEvent big = OutboxEvent.of("order", "1", "Big", new byte[1001]);
        try (Connection connection = db.dataSource.getConnection()) {
            assertThatThrownBy(() -> writer.enqueueAll(connection, List.of(anEventFor("1"), big)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(big.eventId().toString())
                    .hasMessageContaining("1001 bytes")
                    .hasMessageContaining("outbox.maxPayloadBytes (1000)");
            writer.enqueue(connection, OutboxEvent.of("order", "1", "Fits", new byte[1000]));
        }
        assertThat(rowCount()).as("nothing of the refused batch was written").isEqualTo(1);
    }

    @Test
    void aNullPayloadOrANullEventIsRefusedBeforeAnySql() throws SQLException {
        assertThatThrownBy(() -> OutboxEvent.of("order", "1", "Empty", null))
                .hasMessageContaining("payload must not be null");
        try (Connection connection = db.dataSource.getConnection()) {
            assertThatThrownBy(() -> writer.enqueueAll(connection, Arrays.asList(anEventFor("1"), null)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("events[1] is null");
        }
        assertThat(rowCount()).isZero();
    }

    @Test
    void aHeaderPostgresCannotStoreIsRefusedNamingTheHeader() throws SQLException {
        OutboxEvent badValue = anEventFor("1").withHeaders(Map.of("traceparent", "a\u0000b"));
        OutboxEvent badName = anEventFor("1").withHeaders(Map.of("x\u0000y", "v"));
        try (Connection connection = db.dataSource.getConnection()) {
            assertThatThrownBy(() -> writer.enqueue(connection, badValue))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(badValue.eventId().toString())
                    .hasMessageContaining("header 'traceparent' has a value with a NUL character");
            assertThatThrownBy(() -> writer.enqueue(connection, badName))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("header name 'x\\0y' contains a NUL character");
        }
        assertThatThrownBy(() -> anEventFor("1").withHeaders(Map.of(" ", "v")))
                .hasMessageContaining("header names must be non-blank");
        assertThat(rowCount()).isZero();
    }

    private static long rowCount() {
        return Jdbi.create(db.dataSource).withHandle(h -> h.createQuery("SELECT count(*) FROM "
                + settings.qualifiedTable()).mapTo(Long.class).one());
    }

    private static List<String> aggregateIdsInSequenceOrder() {
        List<String> ids = new ArrayList<>();
        try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT aggregate_id FROM " + settings.qualifiedTable() + " ORDER BY seq")) {
            while (rs.next()) {
                ids.add(rs.getString(1));
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        return ids;
    }
}
