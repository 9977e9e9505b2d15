package io.queuebox.bootstrap;

import io.queuebox.embed.QueueBox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.queuebox.domain.DeliverySettings;
import io.queuebox.ports.DeliveryListener;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxWriter;
import io.queuebox.ports.WakeReason;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import io.queuebox.postgres.PostgresOutbox;
import io.queuebox.postgres.PostgresOutboxSettings;
import io.queuebox.testkit.publisher.RecordingPublisher;
import io.queuebox.jdbc.OutboxTable;
import io.queuebox.testkit.outbox.InMemoryOutboxStore;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.time.Duration;
import java.util.OptionalInt;
import javax.sql.DataSource;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The embedding API on real PostgreSQL, with the testkit's recording broker. */
class QueueBoxTest {

    private static TestDatabase database;
    private static HikariDataSource dataSource;

    @BeforeAll
    static void database() {
        database = TestDatabase.create("embed");
        HikariConfig hikari = new HikariConfig();
        hikari.setJdbcUrl(database.url());
        hikari.setMaximumPoolSize(6);
        dataSource = new HikariDataSource(hikari);
        PostgresOutbox.createSchema(dataSource, PostgresOutboxSettings.defaults());
    }

    @AfterAll
    static void drop() {
        if (dataSource != null) {
            dataSource.close();
        }
        if (database != null) {
            database.close();
        }
    }

    @Test
    void deliversEventsRecordsMetricsAndStopsWithoutLeavingLeases() throws Exception {
        RecordingPublisher broker = RecordingPublisher.acking();
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        List<OutboxEvent> events = database.writeEvents(9);

        QueueBox relay = QueueBox.builder()
                .dataSource(dataSource)
                .publisher(broker)
                .settings(DeliverySettings.builder().workers(2).wakeInterval(Duration.ofMillis(50)).build())
                .meterRegistry(registry)
                .backlogSampleInterval(Duration.ofMillis(200))
                .start();
        try {
            await().atMost(Duration.ofSeconds(15)).untilAsserted(() ->
                    assertThat(broker.deliveredIds()).containsExactlyInAnyOrderElementsOf(
                            events.stream().map(OutboxEvent::eventId).toList()));
            await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(registry.scrape())
                    .contains("queuebox_delivered_events_total 9.0")
                    .contains("queuebox_backlog_pending_rows 0.0"));
            assertThat(relay.liveness().isUp()).isTrue();
        } finally {
            assertThat(relay.stop(Duration.ofSeconds(5))).isTrue();
        }
        assertThat(relay.isRunning()).isFalse();
        assertThat(relay.liveness().isUp()).isFalse();
        assertThat(broker.isClosed()).as("the caller owns the publisher").isFalse();
        assertThat(database.count("public.queuebox_outbox", "lease_token IS NOT NULL")).isZero();
        assertThat(database.count("public.queuebox_outbox", "status = 'sent'")).isEqualTo(9);
    }

    @Test
    void theDataSourcesUrlChoosesTheAdapterAndOutboxNamesAnotherTable() throws Exception {
        PostgresOutboxSettings custom = PostgresOutboxSettings.builder().schema("embed_custom").table("orders_outbox").build();
        PostgresOutbox.createSchema(dataSource, custom);
        RecordingPublisher broker = RecordingPublisher.acking();
        OutboxEvent event = OutboxEvent.of("order", "custom-1", "OrderPlaced", "{}".getBytes());
        try (Connection connection = dataSource.getConnection()) {
            PostgresOutbox.jdbcWriter(custom).enqueue(connection, event);
        }

        QueueBox relay = QueueBox.builder().dataSource(dataSource).publisher(broker)
                .outbox(new OutboxTable("embed_custom", "orders_outbox", false, OptionalInt.empty()))
                .settings(DeliverySettings.builder().wakeInterval(Duration.ofMillis(50)).build())
                .start();
        try {
            await().atMost(Duration.ofSeconds(15)).untilAsserted(() ->
                    assertThat(broker.deliveredIds()).containsExactly(event.eventId()));
        } finally {
            relay.close();
        }
    }

    @Test
    void aStoreGivenDirectlyIsTheOneDeliveredFrom() {
        RecordingPublisher broker = RecordingPublisher.acking();
        InMemoryOutboxStore store = InMemoryOutboxStore.create();
        OutboxEvent event = OutboxEvent.of("order", "memory-1", "OrderPlaced", "{}".getBytes());
        store.enqueue(event);

        QueueBox relay = QueueBox.builder().store(store).publisher(broker)
                .settings(DeliverySettings.builder().wakeInterval(Duration.ofMillis(50)).build()).start();
        try {
            await().atMost(Duration.ofSeconds(15)).untilAsserted(() ->
                    assertThat(broker.deliveredIds()).containsExactly(event.eventId()));
            assertThat(relay.store()).isSameAs(store);
        } finally {
            relay.close();
        }
    }

    @Test
    void aDataSourceNoAdapterAcceptsIsRefusedNamingItsUrlWithoutCredentials() {
        DataSource h2 = urlOnly("jdbc:h2:mem:orders;PASSWORD=secret");
        DataSource mariaDb = urlOnly("jdbc:mariadb://app:S3cretPw@db:3306/shop");

        assertThatThrownBy(() -> QueueBox.builder().dataSource(mariaDb).publisher(RecordingPublisher.acking()).start())
                .isInstanceOf(IllegalStateException.class).hasMessageNotContaining("S3cretPw");

        assertThatThrownBy(() -> QueueBox.builder().dataSource(h2).publisher(RecordingPublisher.acking()).start())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("no database adapter on the class path accepts the data source's URL (jdbc:h2:...)")
                .hasMessageNotContaining("secret");
    }

    @Test
    void startReturnsAtOnceWhileTheDatabaseIsDownAndDeliversOnceItIsUp() throws Exception {
        java.util.concurrent.atomic.AtomicBoolean up = new java.util.concurrent.atomic.AtomicBoolean();
        DataSource flaky = proxy(DataSource.class, (method, args) -> {
            if (!method.equals("getConnection")) {
                return null;
            }
            if (!up.get()) {
                throw new java.io.UncheckedIOException(new java.io.IOException("down"));
            }
            try {
                return dataSource.getConnection();
            } catch (java.sql.SQLException e) {
                throw new IllegalStateException(e);
            }
        });
        RecordingPublisher broker = RecordingPublisher.acking();
        PostgresOutboxSettings table = PostgresOutboxSettings.builder().schema("embed_down").build();
        PostgresOutbox.createSchema(dataSource, table);
        List<OutboxEvent> events = List.of(OutboxEvent.of("order", "down-1", "OrderPlaced", "{}".getBytes()),
                OutboxEvent.of("order", "down-1", "OrderPaid", "{}".getBytes()));
        try (Connection connection = dataSource.getConnection()) {
            PostgresOutbox.jdbcWriter(table).enqueueAll(connection, events);
        }

        QueueBox relay = QueueBox.builder().dataSource(new DownThenUp(flaky)).publisher(broker)
                .outbox(new OutboxTable("embed_down", "queuebox_outbox", false, OptionalInt.empty()))
                .settings(DeliverySettings.builder().wakeInterval(Duration.ofMillis(50)).build()).start();
        try {
            assertThat(relay.isRunning()).as("started while the database was down").isTrue();
            up.set(true);
            await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(broker.deliveredIds())
                    .containsExactlyElementsOf(events.stream().map(OutboxEvent::eventId).toList()));
        } finally {
            relay.close();
        }
    }

    /** Turns the proxy's unchecked "down" into the SQLException a driver throws. */
    private record DownThenUp(DataSource target) implements DataSource {
        @Override
        public Connection getConnection() throws java.sql.SQLException {
            try {
                return target.getConnection();
            } catch (java.io.UncheckedIOException e) {
                throw new java.sql.SQLException("Connection refused", "08001", e);
            }
        }

        @Override
        public Connection getConnection(String user, String password) throws java.sql.SQLException {
            return getConnection();
        }

        @Override
        public java.io.PrintWriter getLogWriter() {
            return null;
        }

        @Override
        public void setLogWriter(java.io.PrintWriter out) {
        }

        @Override
        public void setLoginTimeout(int seconds) {
        }

        @Override
        public int getLoginTimeout() {
            return 0;
        }

        @Override
        public java.util.logging.Logger getParentLogger() {
            return java.util.logging.Logger.getGlobal();
        }

        @Override
        public <T> T unwrap(Class<T> iface) throws java.sql.SQLException {
            throw new java.sql.SQLException("not a wrapper");
        }

        @Override
        public boolean isWrapperFor(Class<?> iface) {
            return false;
        }
    }

    /** A data source whose connections only answer their JDBC URL. */
    private static DataSource urlOnly(String url) {
        DatabaseMetaData metaData = proxy(DatabaseMetaData.class, (method, args) -> method.equals("getURL") ? url : null);
        Connection connection = proxy(Connection.class, (method, args) -> method.equals("getMetaData") ? metaData : null);
        return proxy(DataSource.class, (method, args) -> method.equals("getConnection") ? connection : null);
    }

    private static <T> T proxy(Class<T> type, java.util.function.BiFunction<String, Object[], Object> answer) {
        return type.cast(java.lang.reflect.Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type},
                (self, method, args) -> answer.apply(method.getName(), args)));
    }

    @Test
    void builderNamesWhatIsMissing() {
        assertThatThrownBy(() -> QueueBox.builder().publisher(RecordingPublisher.acking()).start())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("dataSource");
        assertThatThrownBy(() -> QueueBox.builder().dataSource(null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("dataSource");
        InMemoryOutboxStore store = InMemoryOutboxStore.create();
        assertThatThrownBy(() -> QueueBox.builder().dataSource(dataSource).store(store)
                .publisher(RecordingPublisher.acking()).start())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("one of dataSource or store");
        assertThatThrownBy(() -> QueueBox.builder().store(store)
                .outbox(new OutboxTable("public", "queuebox_outbox", false, OptionalInt.empty()))
                .publisher(RecordingPublisher.acking()).start())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("outbox applies to dataSource");
    }

    /** A relay that would poll only every 10 s, and the wake-ups that reached its engine. */
    private static final Duration LONG_POLL = Duration.ofSeconds(10);
    private static final Duration PROMPTLY = Duration.ofSeconds(2);

    private static final class Wakes implements DeliveryListener {
        final List<WakeReason> reasons = new java.util.concurrent.CopyOnWriteArrayList<>();
        final java.util.concurrent.atomic.AtomicInteger claims = new java.util.concurrent.atomic.AtomicInteger();

        @Override
        public void onWake(WakeReason reason) {
            reasons.add(reason);
        }

        @Override
        public void onClaimed(int rows, Duration elapsed) {
            claims.incrementAndGet();
        }

        long external() {
            return reasons.stream().filter(WakeReason.EXTERNAL::equals).count();
        }
    }

    /** A table of its own, so that the other tests' counts of public.queuebox_outbox stay theirs. */
    private static final PostgresOutboxSettings AFTER_COMMIT = PostgresOutboxSettings.builder().table("after_commit_outbox").build();

    private static QueueBox idleRelayPollingEvery10s(RecordingPublisher broker, Wakes wakes) {
        PostgresOutbox.createSchema(dataSource, AFTER_COMMIT);
        QueueBox relay = QueueBox.builder().dataSource(dataSource).publisher(broker).listener(wakes)
                .outbox(new OutboxTable("public", "after_commit_outbox", false, OptionalInt.empty()))
                .settings(DeliverySettings.builder().wakeInterval(LONG_POLL).build()).start();
        await().atMost(PROMPTLY).until(() -> wakes.claims.get() >= 1); // the claim at start is behind us
        return relay;
    }

    @Test
    void wakeAfterCommitWakesDeliveryWhenTheJdbiTransactionCommitsAndNotWhenItRollsBack() throws Exception {
        RecordingPublisher broker = RecordingPublisher.acking();
        Wakes wakes = new Wakes();
        Jdbi jdbi = Jdbi.create(dataSource);
        OutboxWriter<Handle> outbox = PostgresOutbox.jdbiWriter(AFTER_COMMIT);
        OutboxEvent rolledBack = OutboxEvent.of("order", "jdbi-1", "OrderPlaced", "{}".getBytes());
        OutboxEvent committed = OutboxEvent.of("order", "jdbi-2", "OrderPlaced", "{}".getBytes());

        try (QueueBox relay = idleRelayPollingEvery10s(broker, wakes)) {
            assertThatThrownBy(() -> jdbi.useTransaction(handle -> {
                outbox.enqueue(handle, rolledBack);
                relay.wakeAfterCommit(handle);
                throw new IllegalStateException("the business change failed");
            })).hasMessage("the business change failed");
            Thread.sleep(300);
            assertThat(wakes.external()).as("a rolled-back transaction wakes nothing").isZero();

            long start = System.nanoTime();
            jdbi.useTransaction(handle -> {
                outbox.enqueue(handle, committed);
                relay.wakeAfterCommit(handle);
                assertThat(wakes.external()).as("not before the commit").isZero();
            });

            await().atMost(PROMPTLY).untilAsserted(() -> assertThat(broker.deliveredIds()).contains(committed.eventId()));
            assertThat(broker.deliveredIds()).doesNotContain(rolledBack.eventId());
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(LONG_POLL);
            assertThat(wakes.external()).isEqualTo(1);
        }
    }

    @Test
    void wakeAfterCommitOnAHandleInAutoCommitWakesAtOnce() {
        RecordingPublisher broker = RecordingPublisher.acking();
        Wakes wakes = new Wakes();
        OutboxEvent event = OutboxEvent.of("order", "jdbi-3", "OrderPlaced", "{}".getBytes());

        try (QueueBox relay = idleRelayPollingEvery10s(broker, wakes)) {
            Jdbi.create(dataSource).useHandle(handle -> {
                PostgresOutbox.jdbiWriter(AFTER_COMMIT).enqueue(handle, event);
                relay.wakeAfterCommit(handle);
            });

            await().atMost(PROMPTLY).untilAsserted(() -> assertThat(broker.deliveredIds()).contains(event.eventId()));
        }
    }

    @Test
    void writeAndCommitCommitsTheCallersTransactionAndDeliversAtOnce() throws Exception {
        RecordingPublisher broker = RecordingPublisher.acking();
        Wakes wakes = new Wakes();
        OutboxEvent placed = OutboxEvent.of("order", "jdbc-1", "OrderPlaced", "{}".getBytes());
        OutboxEvent paid = OutboxEvent.of("order", "jdbc-1", "OrderPaid", "{}".getBytes());
        database.execute("CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY)");

        try (QueueBox relay = idleRelayPollingEvery10s(broker, wakes);
             Connection connection = dataSource.getConnection()) {
            connection.setAutoCommit(false);
            try (java.sql.Statement business = connection.createStatement()) {
                business.execute("INSERT INTO orders (id) VALUES ('jdbc-1')");
            }

            relay.writeAndCommit(connection, List.of(placed, paid));

            await().atMost(PROMPTLY).untilAsserted(() ->
                    assertThat(broker.deliveredIds()).containsSubsequence(placed.eventId(), paid.eventId()));
            assertThat(database.count("orders", "id = 'jdbc-1'")).as("the business change committed with them").isEqualTo(1);
            assertThat(wakes.external()).isEqualTo(1);
            assertThat(connection.isClosed()).isFalse();
        }
    }

    @Test
    void writeAndCommitRefusesAnAutoCommitConnectionAndARelayBuiltOnAStore() throws Exception {
        RecordingPublisher broker = RecordingPublisher.acking();
        OutboxEvent event = OutboxEvent.of("order", "jdbc-2", "OrderPlaced", "{}".getBytes());
        PostgresOutbox.createSchema(dataSource, AFTER_COMMIT);
        try (QueueBox relay = QueueBox.builder().dataSource(dataSource).publisher(broker)
                .outbox(new OutboxTable("public", "after_commit_outbox", false, OptionalInt.empty())).start();
             Connection connection = dataSource.getConnection()) {
            assertThatThrownBy(() -> relay.writeAndCommit(connection, List.of(event)))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("setAutoCommit(false)");
        }
        try (QueueBox relay = QueueBox.builder().store(InMemoryOutboxStore.create()).publisher(broker).start();
             Connection connection = dataSource.getConnection()) {
            connection.setAutoCommit(false);
            assertThatThrownBy(() -> relay.writeAndCommit(connection, List.of(event)))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("built with store(...)")
                    .hasMessageContaining("wake()");
            connection.rollback();
        }
        assertThat(database.count("public.after_commit_outbox", "aggregate_id = 'jdbc-2'")).isZero();
    }
}
