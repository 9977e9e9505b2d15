package io.queuebox.sqlserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.queuebox.jdbc.ConnectRefusal;
import io.queuebox.jdbc.DatabaseLocation;
import java.sql.SQLException;
import io.queuebox.jdbc.DatabaseProvider;
import io.queuebox.jdbc.OutboxTable;
import io.queuebox.ports.CaptureMode;
import java.util.OptionalInt;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

/** The SQL Server provider without a server: URL parsing, identifier rules, driver properties, the scripts. */
class SqlServerDatabaseProviderTest {

    private final DatabaseProvider provider = new SqlServerDatabaseProvider();

    @Test
    void theAdapterListsItsProviderForTheServiceLoader() {
        assertThat(ServiceLoader.load(DatabaseProvider.class).stream().map(ServiceLoader.Provider::type))
                .contains(SqlServerDatabaseProvider.class);
    }

    @Test
    void itAcceptsSqlServerUrlsOnlyAndReadsMssqlPlus() {
        assertThat(provider.accepts("jdbc:sqlserver://db:1433;databaseName=shop")).isTrue();
        assertThat(provider.accepts("JDBC:SQLSERVER://db;databaseName=shop")).isTrue();
        assertThat(provider.accepts("jdbc:postgresql://db/shop")).isFalse();
        assertThat(provider.captureMode()).isEqualTo(CaptureMode.SQLSERVER_CDC);
        assertThat(provider.defaultSchema()).isEqualTo("dbo");
    }

    @Test
    void locatingReadsHostPortAndDatabaseNameWithTheDriversDefaults() {
        assertThat(provider.locate("jdbc:sqlserver://mssql.internal:14330;databaseName=shop;encrypt=true"))
                .isEqualTo(new DatabaseLocation("mssql.internal", 14330, "shop"));
        assertThat(provider.locate("jdbc:sqlserver://mssql;DATABASENAME=shop"))
                .as("default port; property names without case").isEqualTo(new DatabaseLocation("mssql", 1433, "shop"));
        assertThat(provider.locate("jdbc:sqlserver://mssql\\SQLEXPRESS;database=shop"))
                .isEqualTo(new DatabaseLocation("mssql", 1433, "shop"));
        assertThat(provider.locate("jdbc:sqlserver://;serverName=mssql;portNumber=1500;databaseName=shop"))
                .isEqualTo(new DatabaseLocation("mssql", 1500, "shop"));
    }

    @Test
    void aBadUrlIsRefusedNamingTheKeyAndTheFault() {
        assertThatThrownBy(() -> provider.locate("jdbc:sqlserver://mssql:port;databaseName=shop"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("database.url: not a SQL Server JDBC URL")
                .hasMessageContaining("'port'");
        assertThatThrownBy(() -> provider.locate("jdbc:sqlserver://mssql;databaseName=shop;password=Sup3r;S3cret"))
                .hasMessageContaining("a property after 'password' has no name=value form")
                .hasMessageNotContaining("S3cret");
    }

    @Test
    void aBracedValueMayHoldSemicolonsAndUserNameIsAnAccount() {
        String url = "jdbc:sqlserver://mssql:1433;databaseName=shop;userName=relay;password={Sup3r;S3cret}}x};encrypt=true";

        assertThat(provider.locate(url)).isEqualTo(new DatabaseLocation("mssql", 1433, "shop"));
        assertThat(provider.urlProperty(url, "password")).hasValue("{Sup3r;S3cret}}x}");
        assertThat(provider.urlProperty(url, "user")).as("mssql-jdbc's synonym").hasValue("relay");
        assertThat(provider.relocate(url, new DatabaseLocation("replica", 1433, "shop")))
                .isEqualTo("jdbc:sqlserver://replica:1433;userName=relay;password={Sup3r;S3cret}}x};encrypt=true;databaseName=shop");
    }

    @Test
    void theAccountOfTheUrlCanBeLeftOutForCapturesOwn() {
        assertThat(provider.withoutAccount("jdbc:sqlserver://mssql\\A:1500;databaseName=shop;UserName=relay;password={a;b};encrypt=true"))
                .isEqualTo("jdbc:sqlserver://mssql\\A:1500;databaseName=shop;encrypt=true");
    }

    @Test
    void aNamedInstanceWithoutAPortKeepsNoneSoTheDriverFindsItsPort() {
        assertThat(provider.relocate("jdbc:sqlserver://mssql\\SQLEXPRESS;databaseName=shop",
                new DatabaseLocation("mssql", 1433, "cdc_shop")))
                .isEqualTo("jdbc:sqlserver://mssql\\SQLEXPRESS;databaseName=cdc_shop");
        assertThat(provider.relocate("jdbc:sqlserver://mssql\\SQLEXPRESS;databaseName=shop",
                new DatabaseLocation("mssql", 14330, "shop")))
                .isEqualTo("jdbc:sqlserver://mssql\\SQLEXPRESS:14330;databaseName=shop");
    }

    @Test
    void relocatingKeepsEveryOtherPropertyAndTheInstanceOnlyOnTheSameHost() {
        String url = "jdbc:sqlserver://mssql\\A:1433;databaseName=shop;encrypt=true;trustServerCertificate=true";

        assertThat(provider.relocate(url, new DatabaseLocation("replica", 1434, "shop_ro")))
                .isEqualTo("jdbc:sqlserver://replica:1434;encrypt=true;trustServerCertificate=true;databaseName=shop_ro");
        assertThat(provider.relocate(url, new DatabaseLocation("mssql", 1433, "other")))
                .isEqualTo("jdbc:sqlserver://mssql\\A:1433;encrypt=true;trustServerCertificate=true;databaseName=other");
        assertThat(provider.urlProperty(url, "TRUSTSERVERCERTIFICATE")).hasValue("true");
        assertThat(provider.urlProperty(url, "user")).isEmpty();
    }

    @Test
    void theRelayBoundsEveryStatementInMillisecondsAndCancelsItOnTheServerFirst() {
        assertThat(provider.connectionProperties(30_000, "queuebox"))
                .containsEntry("socketTimeout", "30000")
                .containsEntry("queryTimeout", "29")
                .containsEntry("applicationName", "queuebox");
        assertThat(provider.connectionProperties(0, "queuebox")).doesNotContainKeys("socketTimeout", "queryTimeout");
        assertThat(provider.connectionProperties(2000, "queuebox")).containsEntry("queryTimeout", "1");
        assertThat(provider.socketTimeoutProblem(1999)).hasValueSatisfying(problem -> assertThat(problem).contains("2000"));
        assertThat(provider.socketTimeoutProblem(2000)).isEmpty();
        assertThat(provider.socketTimeoutProblem(0)).isEmpty();
    }

    @Test
    void holdRowLocksFromConfigurationReachesTheStoreSettings() {
        assertThat(SqlServerDatabaseProvider.settings(new OutboxTable("dbo", "queuebox_outbox", false,
                OptionalInt.empty(), true)).holdRowLocks()).isTrue();
        assertThat(SqlServerDatabaseProvider.settings(new OutboxTable("dbo", "queuebox_outbox", false,
                OptionalInt.empty())).holdRowLocks()).isFalse();
    }

    @Test
    void identifiersFollowSqlServerRulesAndTheProblemNamesTheKey() {
        assertThat(provider.outboxTableProblem(table("Sales", "OrderOutbox"))).as("PascalCase is common on SQL Server")
                .isEmpty();
        assertThat(provider.outboxTableProblem(table("dbo", "t".repeat(101)))).hasValueSatisfying(problem ->
                assertThat(problem).startsWith("outbox.table"));
        assertThat(provider.outboxTableProblem(table("dbo]; DROP TABLE x; --", "queuebox_outbox")))
                .hasValueSatisfying(problem -> assertThat(problem).startsWith("outbox.schema"));
    }

    @Test
    void theScriptsAreTheShippedOnesForTheConfiguredTable() {
        assertThat(provider.schemaLocation()).isEqualTo("db/queuebox/sqlserver");
        assertThat(String.join("\n", provider.renderSchemaScripts(table("Sales", "OrderOutbox"))))
                .contains("[Sales].[OrderOutbox]")
                .doesNotContain("${queuebox_");
    }

    @Test
    void theRightsSentencesNameTheUserTheRightAndTheGrant() {
        assertThat(SqlServerRights.onTable("relay", "DELETE", "[dbo].[queuebox_outbox]"))
                .isEqualTo("user relay lacks DELETE on [dbo].[queuebox_outbox]: GRANT DELETE ON OBJECT::[dbo].[queuebox_outbox] TO [relay];");
        assertThat(SqlServerRights.DELIVERY_QUERY).contains("HAS_PERMS_BY_NAME(?, 'OBJECT', 'UPDATE')");
    }

    @Test
    void loginAndDatabaseRefusalsAreToldByErrorNumberAndAnythingElseIsWaitedFor() {
        assertThat(provider.refusal(new SQLException("Login failed for user 'relay'.", "S0001", 18456)))
                .hasValue(ConnectRefusal.ACCOUNT);
        assertThat(provider.refusal(new SQLException("Cannot open database \"shop\" requested by the login.", "S0001", 4060)))
                .hasValue(ConnectRefusal.DATABASE);
        assertThat(provider.refusal(new SQLException("The TCP/IP connection to the host mssql has failed.", "08S01", 0)))
                .isEmpty();
    }

    private static OutboxTable table(String schema, String table) {
        return new OutboxTable(schema, table, false, OptionalInt.empty());
    }
}
