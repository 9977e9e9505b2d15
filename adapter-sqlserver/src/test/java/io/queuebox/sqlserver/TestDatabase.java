package io.queuebox.sqlserver;

import io.queuebox.jdbc.testing.ReusingDataSource;
import com.microsoft.sqlserver.jdbc.SQLServerDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.UUID;
import javax.sql.DataSource;

/** A database of its own on the test SQL Server for one test class, dropped afterwards. */
final class TestDatabase implements AutoCloseable {

    final String name;
    final String url;
    final DataSource dataSource;

    private TestDatabase(String name) {
        this.name = name;
        this.url = SqlServerTestServer.url(name);
        SQLServerDataSource dataSource = new SQLServerDataSource();
        dataSource.setURL(url);
        this.dataSource = dataSource;
    }

    static TestDatabase create(String prefix) {
        String name = ("qb_" + prefix + "_" + UUID.randomUUID().toString().substring(0, 8)).toLowerCase(Locale.ROOT);
        onServer("CREATE DATABASE [" + name + "]");
        return new TestDatabase(name);
    }

    SqlServerOutboxSettings.Builder settings() {
        return SqlServerOutboxSettings.builder();
    }

    void execute(String sql) {
        try (Connection connection = dataSource.getConnection(); Statement statement = connection.createStatement()) {
            statement.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException(sql + ": " + e.getMessage(), e);
        }
    }

    long count(String sql) {
        try (Connection connection = dataSource.getConnection(); Statement statement = connection.createStatement();
             var rs = statement.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            throw new IllegalStateException(sql + ": " + e.getMessage(), e);
        }
    }

    private static void onServer(String sql) {
        try (Connection connection = DriverManager.getConnection(SqlServerTestServer.url());
             Statement statement = connection.createStatement()) {
            statement.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException(sql + ": " + e.getMessage(), e);
        }
    }

    /** Reused connections to {@code url}, so that a store call does not pay for a new SQL Server login. */
    static ReusingDataSource reusing(String url, String applicationName) {
        SQLServerDataSource target = new SQLServerDataSource();
        target.setURL(url);
        target.setApplicationName(applicationName);
        return new ReusingDataSource(target);
    }

    @Override
    public void close() {
        onServer("IF DB_ID(N'" + name + "') IS NOT NULL BEGIN ALTER DATABASE [" + name
                + "] SET SINGLE_USER WITH ROLLBACK IMMEDIATE; DROP DATABASE [" + name + "]; END");
    }
}
