package io.queuebox.sqlserver;

import io.queuebox.testkit.services.TestServices;
import org.testcontainers.containers.MSSQLServerContainer;
import org.testcontainers.utility.DockerImageName;

/**
 * The SQL Server the integration suites talk to: {@code QUEUEBOX_TEST_SQLSERVER_URL} (a JDBC URL with a
 * user that may create databases, and sysadmin for the CDC scenarios) when given, otherwise one
 * Testcontainers SQL Server for the whole JVM, with SQL Server Agent enabled for CDC. The suites carry
 * {@code @Testcontainers(disabledWithoutDocker = true)}, so without a Docker engine they are reported as
 * skipped before this class is ever asked.
 */
final class SqlServerTestServer {

    static final String IMAGE = "mcr.microsoft.com/mssql/server:2022-latest";

    private static String url;

    private SqlServerTestServer() {
    }

    /** A JDBC URL of the server, with credentials, connected to its default database. */
    static synchronized String url() {
        if (url == null) {
            url = TestServices.explicit("QUEUEBOX_TEST_SQLSERVER_URL").orElseGet(SqlServerTestServer::startContainer);
        }
        return url;
    }

    /** The server's URL for one database (the last databaseName in a SQL Server URL wins). */
    static String url(String database) {
        return url() + ";databaseName=" + database;
    }

    @SuppressWarnings("resource") // one container per JVM; Testcontainers' reaper removes it at exit
    private static String startContainer() {
        MSSQLServerContainer<?> container = new MSSQLServerContainer<>(DockerImageName.parse(IMAGE))
                .acceptLicense()
                .withEnv("MSSQL_AGENT_ENABLED", "true");
        container.start();
        return container.getJdbcUrl() + ";user=" + container.getUsername() + ";password=" + container.getPassword()
                + ";encrypt=false;trustServerCertificate=true";
    }
}
