package io.queuebox.postgres;

import io.queuebox.jdbc.ConnectRefusal;
import io.queuebox.jdbc.DatabaseLocation;
import io.queuebox.jdbc.DatabaseProvider;
import io.queuebox.jdbc.OutboxDatabase;
import io.queuebox.jdbc.OutboxDatabaseParts;
import io.queuebox.jdbc.OutboxTable;
import io.queuebox.ports.CaptureMode;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;

/** PostgreSQL as a {@link DatabaseProvider}: {@code jdbc:postgresql:} URLs, {@link PostgresOutbox} underneath. */
public final class PostgresDatabaseProvider implements DatabaseProvider {

    private static final String PREFIX = "jdbc:postgresql:";
    private static final int DEFAULT_PORT = 5432;

    @Override
    public String name() {
        return "postgresql";
    }

    @Override
    public String displayName() {
        return "PostgreSQL";
    }

    @Override
    public boolean accepts(String jdbcUrl) {
        return jdbcUrl != null && jdbcUrl.startsWith(PREFIX);
    }

    @Override
    public String exampleUrl() {
        return "jdbc:postgresql://db:5432/app";
    }

    @Override
    public CaptureMode captureMode() {
        return CaptureMode.POSTGRES_LOGICAL;
    }

    /** LISTEN/NOTIFY on the trigger of schema version 4. */
    @Override
    public boolean notifiesInserts() {
        return true;
    }

    /** Claims hold row locks unless {@code outbox.holdRowLocks: false} (see {@link PostgresOutboxSettings.Builder#holdRowLocks}). */
    @Override
    public boolean holdsRowLocksByDefault() {
        return true;
    }

    @Override
    public String defaultSchema() {
        return PostgresOutboxSettings.DEFAULT_SCHEMA;
    }

    @Override
    public Optional<String> outboxTableProblem(OutboxTable table) {
        try {
            settings(table);
            return Optional.empty();
        } catch (IllegalArgumentException e) {
            return Optional.of(e.getMessage());
        }
    }

    @Override
    public String identifierRules() {
        return "a lower-case letter or _, then lower-case letters, digits or _; schema at most 63 characters, table at most 48 (its index names add a suffix)";
    }

    /** {@code jdbc:postgresql://host1:5432,host2/db?prop=value}, or {@code jdbc:postgresql:db} for localhost. */
    @Override
    public DatabaseLocation locate(String jdbcUrl) {
        Url url = Url.parse(jdbcUrl);
        String first = url.hosts().split(",")[0];
        String host = first;
        String port = "";
        if (first.startsWith("[")) {
            int close = first.indexOf(']');
            if (close < 0) {
                throw bad(jdbcUrl, "an IPv6 host needs its closing ']'");
            }
            host = first.substring(1, close);
            port = first.length() > close + 2 && first.charAt(close + 1) == ':' ? first.substring(close + 2) : "";
        } else if (first.contains(":")) {
            host = first.substring(0, first.indexOf(':'));
            port = first.substring(first.indexOf(':') + 1);
        }
        return new DatabaseLocation(host.isEmpty() ? "localhost" : host, port(jdbcUrl, port), url.database());
    }

    @Override
    public String relocate(String jdbcUrl, DatabaseLocation location) {
        Url url = Url.parse(jdbcUrl);
        String host = location.host().contains(":") ? "[" + location.host() + "]" : location.host();
        return "jdbc:postgresql://" + host + ":" + location.port() + "/" + location.database()
                + (url.query().isEmpty() ? "" : "?" + url.query());
    }

    @Override
    public String withoutAccount(String jdbcUrl) {
        Url url = Url.parse(jdbcUrl);
        String query = java.util.Arrays.stream(url.query().split("&"))
                .filter(pair -> !pair.isEmpty() && !pair.startsWith("user=") && !pair.startsWith("password="))
                .collect(java.util.stream.Collectors.joining("&"));
        int question = jdbcUrl.indexOf('?');
        String base = question < 0 ? jdbcUrl : jdbcUrl.substring(0, question);
        return query.isEmpty() ? base : base + "?" + query;
    }

    @Override
    public Optional<String> urlProperty(String jdbcUrl, String name) {
        for (String pair : Url.parse(jdbcUrl).query().split("&")) {
            if (pair.startsWith(name + "=")) {
                return Optional.of(URLDecoder.decode(pair.substring(name.length() + 1), StandardCharsets.UTF_8));
            }
        }
        return Optional.empty();
    }

    @Override
    public Map<String, String> connectionProperties(long socketTimeoutMillis, String applicationName) {
        Map<String, String> properties = new LinkedHashMap<>();
        properties.put("ApplicationName", applicationName);
        if (socketTimeoutMillis > 0) {
            // pgjdbc counts the socket timeout in seconds.
            properties.put("socketTimeout", Long.toString((socketTimeoutMillis + 999) / 1000));
            // The server gives up first and rolls the statement back: without it a statement the client gave
            // up on (waiting on a lock a migration holds, say) went on waiting on the server and ran later.
            properties.put("options", "-c statement_timeout=" + statementTimeoutMillis(socketTimeoutMillis));
        }
        properties.put("tcpKeepAlive", "true");
        return properties;
    }

    /** Below the socket timeout by a second (at least half of it), so that the server's answer wins the race. */
    static long statementTimeoutMillis(long socketTimeoutMillis) {
        return Math.max(socketTimeoutMillis / 2, socketTimeoutMillis - 1000);
    }

    /** 28P01 is a wrong password; the rest of class 28 an account the server refuses; 3D000 no such database. */
    @Override
    public Optional<ConnectRefusal> refusal(SQLException error) {
        if ("28P01".equals(error.getSQLState())) {
            return Optional.of(ConnectRefusal.PASSWORD);
        }
        return DatabaseProvider.super.refusal(error);
    }

    @Override
    public String schemaLocation() {
        return PostgresOutbox.SCHEMA_LOCATION;
    }

    @Override
    public List<String> renderSchemaScripts(OutboxTable table) {
        return PostgresOutbox.renderSchemaScripts(settings(table));
    }

    @Override
    public OutboxDatabase open(DataSource dataSource, OutboxTable table) {
        Objects.requireNonNull(dataSource, "dataSource");
        PostgresOutboxSettings settings = settings(table);
        return new OutboxDatabaseParts(PostgresOutbox.store(dataSource, settings), PostgresOutbox.jdbcWriter(settings),
                PostgresOutbox.captureStateStore(dataSource, settings), PostgresOutbox.captureLock(dataSource),
                PostgresOutbox.captureSourceInspector(dataSource),
                () -> PostgresOutbox.missingDeliveryRights(dataSource, settings),
                () -> PostgresOutbox.missingMigrationRights(dataSource, settings),
                () -> PostgresOutbox.createSchema(dataSource, settings),
                connections -> Optional.of(PostgresOutbox.insertNotifications(connections, settings)),
                enabled -> PostgresOutbox.insertNotifications(dataSource, settings, enabled));
    }

    static PostgresOutboxSettings settings(OutboxTable table) {
        Objects.requireNonNull(table, "table");
        PostgresOutboxSettings.Builder builder = PostgresOutboxSettings.builder()
                .schema(table.schema())
                .table(table.table())
                .deleteOnSend(table.deleteOnSend())
                .holdRowLocks(table.holdRowLocks());
        table.maxPayloadBytes().ifPresent(builder::maxPayloadBytes);
        return builder.build();
    }

    private static int port(String jdbcUrl, String port) {
        if (port.isEmpty()) {
            return DEFAULT_PORT;
        }
        try {
            int value = Integer.parseInt(port);
            if (value >= 1 && value <= 65_535) {
                return value;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw bad(jdbcUrl, "the port '" + port + "' is not a number from 1 to 65535");
    }

    private static IllegalArgumentException bad(String jdbcUrl, String why) {
        return new IllegalArgumentException("database.url: not a PostgreSQL JDBC URL (" + why
                + "); expected jdbc:postgresql://host:port/database");
    }

    /** The parts of a pgjdbc URL: the host list, the database and the query string. */
    private record Url(String hosts, String database, String query) {

        static Url parse(String jdbcUrl) {
            if (jdbcUrl == null || !jdbcUrl.startsWith(PREFIX)) {
                throw bad(String.valueOf(jdbcUrl), "it does not start with " + PREFIX);
            }
            String rest = jdbcUrl.substring(PREFIX.length());
            String query = "";
            int question = rest.indexOf('?');
            if (question >= 0) {
                query = rest.substring(question + 1);
                rest = rest.substring(0, question);
            }
            if (!rest.startsWith("//")) {
                return new Url("", rest, query);
            }
            rest = rest.substring(2);
            int slash = rest.indexOf('/');
            return new Url(slash < 0 ? rest : rest.substring(0, slash), slash < 0 ? "" : rest.substring(slash + 1), query);
        }
    }
}
