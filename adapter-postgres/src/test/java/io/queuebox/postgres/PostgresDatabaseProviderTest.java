package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.queuebox.jdbc.ConnectRefusal;
import io.queuebox.jdbc.DatabaseLocation;
import java.sql.SQLException;
import io.queuebox.jdbc.DatabaseProvider;
import io.queuebox.jdbc.OutboxDatabase;
import io.queuebox.jdbc.OutboxTable;
import io.queuebox.ports.CaptureMode;
import io.queuebox.ports.OutboxEvent;
import java.sql.Connection;
import java.util.OptionalInt;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

/** The PostgreSQL provider: URL parsing and rules without a database, the pieces it opens on the real one. */
class PostgresDatabaseProviderTest {

    private final DatabaseProvider provider = new PostgresDatabaseProvider();

    @Test
    void theAdapterListsItsProviderForTheServiceLoader() {
        assertThat(ServiceLoader.load(DatabaseProvider.class).stream().map(ServiceLoader.Provider::type))
                .containsExactly(PostgresDatabaseProvider.class);
        assertThat(provider.captureMode()).isEqualTo(CaptureMode.POSTGRES_LOGICAL);
        assertThat(provider.defaultSchema()).isEqualTo("public");
    }

    @Test
    void locatingTakesTheFirstHostAndDefaultsThePort() {
        assertThat(provider.locate("jdbc:postgresql://db/app")).isEqualTo(new DatabaseLocation("db", 5432, "app"));
        assertThat(provider.locate("jdbc:postgresql://[::1]:5433/app?user=x"))
                .isEqualTo(new DatabaseLocation("::1", 5433, "app"));
        assertThat(provider.locate("jdbc:postgresql://db-1:6543,db-2:6543/orders?targetServerType=primary"))
                .isEqualTo(new DatabaseLocation("db-1", 6543, "orders"));
        assertThat(provider.locate("jdbc:postgresql:app")).isEqualTo(new DatabaseLocation("localhost", 5432, "app"));
        assertThatThrownBy(() -> provider.locate("jdbc:postgresql://db:port/app"))
                .hasMessageStartingWith("database.url: not a PostgreSQL JDBC URL").hasMessageContaining("'port'");
    }

    @Test
    void relocatingKeepsTheQueryAndUrlPropertiesAreDecoded() {
        String url = "jdbc:postgresql://db-1,db-2/orders?user=relay&password=p%40ss&sslmode=require";

        assertThat(provider.relocate(url, new DatabaseLocation("replica", 5433, "orders")))
                .isEqualTo("jdbc:postgresql://replica:5433/orders?user=relay&password=p%40ss&sslmode=require");
        assertThat(provider.relocate("jdbc:postgresql://db/app", new DatabaseLocation("::1", 5432, "app")))
                .isEqualTo("jdbc:postgresql://[::1]:5432/app");
        assertThat(provider.urlProperty(url, "password")).hasValue("p@ss");
        assertThat(provider.withoutAccount(url)).isEqualTo("jdbc:postgresql://db-1,db-2/orders?sslmode=require");
        assertThat(provider.withoutAccount("jdbc:postgresql://db/app?user=x")).isEqualTo("jdbc:postgresql://db/app");
        assertThat(provider.urlProperty(url, "ssl")).isEmpty();
    }

    @Test
    void theRelayBoundsEveryStatementAndTheServerGivesUpASecondEarlier() {
        assertThat(provider.connectionProperties(30_000, "queuebox"))
                .containsEntry("socketTimeout", "30")
                .containsEntry("options", "-c statement_timeout=29000")
                .containsEntry("tcpKeepAlive", "true")
                .containsEntry("ApplicationName", "queuebox");
        assertThat(provider.connectionProperties(0, "queuebox")).doesNotContainKeys("socketTimeout", "options");
        assertThat(PostgresDatabaseProvider.statementTimeoutMillis(1500)).isEqualTo(750);
    }

    @Test
    void identifiersFollowPostgresRulesAndTheProblemNamesTheKey() {
        assertThat(provider.outboxTableProblem(table("public", "t".repeat(48)))).isEmpty();
        assertThat(provider.outboxTableProblem(table("public", "t".repeat(49))))
                .hasValueSatisfying(problem -> assertThat(problem).startsWith("outbox.table"));
        assertThat(provider.outboxTableProblem(table("Sales", "queuebox_outbox")))
                .hasValueSatisfying(problem -> assertThat(problem).startsWith("outbox.schema"));
    }

    @Test
    void theOpenedPiecesWorkOnTheRealDatabase() throws Exception {
        try (TestDatabase db = TestDatabase.withFreshSchema("provider")) {
            OutboxTable table = new OutboxTable(db.schema, "provider_outbox", false, OptionalInt.empty());
            OutboxDatabase database = provider.open(db.dataSource, table);

            assertThat(database.missingMigrationRights()).isEmpty();
            database.createSchema();
            try (Connection connection = db.dataSource.getConnection()) {
                database.writer().enqueue(connection, OutboxEvent.of("order", "1", "OrderPlaced", "{}".getBytes()));
            }

            assertThat(database.store().stats().pending()).isEqualTo(1);
            assertThat(database.missingDeliveryRights()).isEmpty();
            assertThat(database.captureStateStore().findAll()).isEmpty();
            assertThat(String.join("\n", provider.renderSchemaScripts(table))).contains(db.schema).contains("provider_outbox")
                    .doesNotContain("${queuebox_");
        }
    }

    @Test
    void refusalsAreToldBySqlState() {
        assertThat(provider.refusal(new SQLException("password authentication failed", "28P01"))).hasValue(ConnectRefusal.PASSWORD);
        assertThat(provider.refusal(new SQLException("no pg_hba.conf entry", "28000"))).hasValue(ConnectRefusal.ACCOUNT);
        assertThat(provider.refusal(new SQLException("database \"x\" does not exist", "3D000"))).hasValue(ConnectRefusal.DATABASE);
        assertThat(provider.refusal(new SQLException("Connection refused", "08001"))).isEmpty();
    }

    private static OutboxTable table(String schema, String table) {
        return new OutboxTable(schema, table, false, OptionalInt.empty());
    }
}
