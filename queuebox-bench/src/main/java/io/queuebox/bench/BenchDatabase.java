package io.queuebox.bench;

import io.queuebox.embed.config.Databases;
import io.queuebox.jdbc.DatabaseProvider;
import io.queuebox.jdbc.OutboxDatabase;
import io.queuebox.jdbc.OutboxTable;
import java.util.OptionalInt;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * The bench's own database on the local server: created if missing, one outbox table truncated and refilled
 * before each run. The pool hands out connections that count every statement they execute, so the idle
 * workload can tell how many statements the relay sends.
 */
final class BenchDatabase implements AutoCloseable {

    static final String TABLE = "queuebox_outbox";
    static final String PUBLICATION = "queuebox_bench_pub";
    static final String SLOT = "queuebox_bench_slot";

    private static final Set<String> EXECUTING = Set.of("execute", "executeQuery", "executeUpdate", "executeBatch",
            "executeLargeUpdate", "executeLargeBatch");

    final String host;
    final int port;
    final String user;
    final String database;
    /**
     * The outbox of the bench database, through the same seam as the jar; its default table and the database's
     * default claims (on PostgreSQL they hold row locks).
     */
    final OutboxDatabase outbox;
    final OutboxTable table;
    /** The same table and store, with {@code outbox.deleteOnSend}: a sent row is deleted instead of marked. */
    final OutboxDatabase deletingOutbox;
    /** The same table and store, with {@code outbox.holdRowLocks: false}: a claim writes a lease on every row. */
    final OutboxDatabase leasingOutbox;
    private final HikariDataSource pool;
    private final AtomicLong statements = new AtomicLong();
    private final DataSource counting;

    BenchDatabase(String host, int port, String user, String database, int poolSize) throws SQLException {
        this.host = host;
        this.port = port;
        this.user = user;
        this.database = database;
        try (Connection admin = DriverManager.getConnection(url("postgres")); Statement st = admin.createStatement()) {
            try (ResultSet rs = st.executeQuery("SELECT 1 FROM pg_database WHERE datname = '" + database + "'")) {
                if (!rs.next()) {
                    st.execute("CREATE DATABASE \"" + database + "\"");
                }
            }
        }
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url(database));
        config.setUsername(user);
        config.setMaximumPoolSize(poolSize);
        config.setMinimumIdle(poolSize);
        config.setPoolName("bench");
        config.addDataSourceProperty("prepareThreshold", "1");
        pool = new HikariDataSource(config);
        counting = countingDataSource(pool, statements);
        DatabaseProvider provider = Databases.forUrl(url(database)).orElseThrow();
        boolean holding = provider.holdsRowLocksByDefault();
        table = new OutboxTable(provider.defaultSchema(), "queuebox_outbox", false, OptionalInt.empty(), holding);
        provider.open(pool, table).createSchema();
        outbox = provider.open(counting, table);
        deletingOutbox = provider.open(counting, new OutboxTable(table.schema(), table.table(), true, OptionalInt.empty(),
                holding));
        leasingOutbox = provider.open(counting, new OutboxTable(table.schema(), table.table(), false, OptionalInt.empty(),
                false));
    }

    /** The PostgreSQL settings that move the figures, as SHOW answers them. */
    static final java.util.List<String> SETTINGS = java.util.List.of("autovacuum", "synchronous_commit", "shared_buffers",
            "wal_level", "max_wal_size", "fsync", "checkpoint_timeout", "max_connections");

    java.util.Map<String, String> postgresSettings() throws SQLException {
        java.util.Map<String, String> settings = new java.util.LinkedHashMap<>();
        for (String name : SETTINGS) {
            settings.put(name, single("SHOW " + name));
        }
        return settings;
    }

    /** A plain table of the outbox's shape (columns, defaults, check, indexes; no triggers), created if missing. */
    void createOutboxShapedTable(String name) throws SQLException {
        validateName(name);
        execute("CREATE TABLE IF NOT EXISTS " + name + " (LIKE " + TABLE + " INCLUDING ALL)");
    }

    /** A second pool on the bench database, for a peer that must not share the relay's connections. */
    HikariDataSource newPool(String name, int size) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url(database));
        config.setUsername(user);
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(size);
        config.setPoolName(name);
        config.addDataSourceProperty("prepareThreshold", "1");
        return new HikariDataSource(config);
    }

    static void validateName(String database) {
        if (!database.matches("[a-z_][a-z0-9_]{0,62}")) {
            throw new IllegalArgumentException("--pg-database: '" + database + "' is not a plain lower-case identifier");
        }
    }

    String url(String db) {
        return "jdbc:postgresql://" + host + ":" + port + "/" + db + "?user=" + user;
    }

    /** The pool, statements not counted (for the floor and the peers). */
    DataSource rawDataSource() {
        return pool;
    }

    /** The pool, each statement counted. */
    DataSource dataSource() {
        return counting;
    }

    long statementsExecuted() {
        return statements.get();
    }

    String serverVersion() throws SQLException {
        return single("SHOW server_version");
    }

    String walLevel() throws SQLException {
        return single("SHOW wal_level");
    }

    /** Committed transactions of the bench database as the server counts them (flushed about once a second). */
    long transactionsCommitted() throws SQLException {
        try (Connection c = DriverManager.getConnection(url("postgres")); Statement st = c.createStatement()) {
            st.execute("SELECT pg_stat_clear_snapshot()");
            try (ResultSet rs = st.executeQuery("SELECT xact_commit FROM pg_stat_database WHERE datname = '" + database + "'")) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    void reset() throws SQLException {
        execute("TRUNCATE " + TABLE);
    }

    /**
     * Inserts {@code rows} pending events over {@code aggregates} aggregates in one statement (about 230-byte
     * JSON payloads, one header), interleaved so that consecutive rows belong to different aggregates.
     */
    void fill(int rows, int aggregates) throws SQLException {
        fill(TABLE, rows, aggregates);
    }

    /** {@link #fill(int, int)} into another table of the outbox's shape. */
    void fill(String table, int rows, int aggregates) throws SQLException {
        insert(table, rows, aggregates);
        analyze(table);
    }

    /** The INSERT of {@link #fill(int, int)} alone, committed when it returns; no ANALYZE. */
    void insert(int rows, int aggregates) throws SQLException {
        insert(TABLE, rows, aggregates);
    }

    void analyze() throws SQLException {
        analyze(TABLE);
    }

    /** Deletes the sent rows and vacuums the outbox: what a relay's purge and autovacuum leave, at once. */
    void purgeSentAndVacuum() throws SQLException {
        execute("DELETE FROM " + TABLE + " WHERE status = 'sent'");
        execute("VACUUM (ANALYZE) " + TABLE);
    }

    private void analyze(String table) throws SQLException {
        execute("ANALYZE " + table);
    }

    private void insert(String table, int rows, int aggregates) throws SQLException {
        execute("INSERT INTO " + table + " (event_id, aggregate_type, aggregate_id, event_type, payload, headers)"
                + " SELECT gen_random_uuid(), 'order', 'agg-' || (g % " + aggregates + "), 'BenchEvent',"
                + " convert_to('{\"n\":' || g || ',\"pad\":\"' || repeat('x', 200) || '\"}', 'UTF8'),"
                + " '{\"bench\":\"drain\"}'::jsonb"
                + " FROM generate_series(1, " + rows + ") g");
    }

    long count(String condition) throws SQLException {
        return count(TABLE, condition);
    }

    long count(String table, String condition) throws SQLException {
        return Long.parseLong(single("SELECT count(*) FROM " + table + " WHERE " + condition));
    }

    void prepareCapture() throws SQLException {
        dropSlot();
        execute("DROP PUBLICATION IF EXISTS " + PUBLICATION);
        // As docs/how-to/capture-changes.md says: inserts only (updates would be decoded only to be dropped) and, where
        // PostgreSQL has column lists (15 and later), the event id alone (capture reads nothing else of a row).
        boolean columnLists = Integer.parseInt(single("SHOW server_version_num")) >= 150000;
        execute("CREATE PUBLICATION " + PUBLICATION + " FOR TABLE public." + TABLE + (columnLists ? " (event_id)" : "")
                + " WITH (publish = 'insert')");
        execute("DELETE FROM queuebox_capture_state");
    }

    /** A slot nobody reads holds WAL for ever: the bench never leaves one behind. */
    void dropSlot() throws SQLException {
        dropSlot(SLOT);
    }

    void dropSlot(String slot) throws SQLException {
        validateName(slot);
        try (Connection c = DriverManager.getConnection(url("postgres")); Statement st = c.createStatement()) {
            for (int i = 0; i < 50; i++) {
                try (ResultSet rs = st.executeQuery("SELECT active_pid FROM pg_replication_slots WHERE slot_name = '" + slot + "'")) {
                    if (!rs.next()) {
                        return;
                    }
                    if (rs.getObject(1) == null) {
                        st.execute("SELECT pg_drop_replication_slot('" + slot + "')");
                        return;
                    }
                }
                try {
                    Thread.sleep(200);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
            st.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = '" + slot + "'");
        }
    }

    /**
     * The outbox table's unsent rows: pending (and of those, leased by a worker now), and parked; never throws
     * (a failure is named in the answer).
     */
    String outboxState() {
        try (Connection c = pool.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(
                "SELECT count(*) FILTER (WHERE status = 'pending'), count(*) FILTER (WHERE status = 'pending' AND lease_until > now()),"
                        + " count(*) FILTER (WHERE status = 'parked') FROM " + TABLE)) {
            rs.next();
            return "outbox pending=" + rs.getLong(1) + ", leased=" + rs.getLong(2) + ", parked=" + rs.getLong(3);
        } catch (SQLException e) {
            return "outbox state unknown (" + e.getMessage() + ")";
        }
    }

    void execute(String sql) throws SQLException {
        try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
            st.execute(sql);
        }
    }

    private String single(String sql) throws SQLException {
        try (Connection c = pool.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        }
    }

    @Override
    public void close() {
        pool.close();
    }

    static DataSource countingDataSource(DataSource target, AtomicLong counter) {
        return proxy(DataSource.class, target, (result, method) -> result instanceof Connection connection
                ? proxy(Connection.class, connection, (inner, m) -> inner instanceof Statement statement
                        ? proxyStatement(statement, counter) : inner)
                : result);
    }

    private static Object proxyStatement(Statement statement, AtomicLong counter) {
        Class<?> type = statement instanceof java.sql.PreparedStatement ? java.sql.PreparedStatement.class : Statement.class;
        if (statement instanceof java.sql.CallableStatement) {
            type = java.sql.CallableStatement.class;
        }
        return Proxy.newProxyInstance(BenchDatabase.class.getClassLoader(), new Class<?>[] {type}, (p, method, args) -> {
            if (EXECUTING.contains(method.getName())) {
                counter.incrementAndGet();
            }
            if (method.getName().equals("unwrap") || method.getName().equals("isWrapperFor")) {
                return invoke(method, statement, args);
            }
            return invoke(method, statement, args);
        });
    }

    private interface Wrap {
        Object apply(Object result, java.lang.reflect.Method method);
    }

    private static <T> T proxy(Class<T> type, Object target, Wrap wrap) {
        InvocationHandler handler = (p, method, args) -> wrap.apply(invoke(method, target, args), method);
        return type.cast(Proxy.newProxyInstance(BenchDatabase.class.getClassLoader(), new Class<?>[] {type}, handler));
    }

    private static Object invoke(java.lang.reflect.Method method, Object target, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
