package io.queuebox.embed.config;

import static io.queuebox.embed.config.ConfigKey.key;

import io.queuebox.embed.config.ConfigKey.Type;
import io.queuebox.domain.DeliverySettings;
import io.queuebox.domain.RetryPolicy;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.ParkingPolicy;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Every configuration key QueueBox knows, with its type, default and documentation: the single source for
 * validation, {@code config check}, the Spring Boot starter and docs/reference/configuration.md. The delivery
 * keys take their defaults from {@link DeliverySettings} and {@link RetryPolicy}, so the jar, the starter and
 * {@code QueueBox.builder()} without settings deliver alike. Keys under {@code broker.<type>.}
 * are not listed here: they go unchanged to the broker provider, which validates them.
 */
public final class Keys {

    public static final String BROKER_PREFIX = "broker.";

    /** The {@link io.queuebox.jdbc.DatabaseProvider#name() names} of the databases that have keys of their own. */
    static final String POSTGRESQL = "postgresql";
    static final String SQLSERVER = "sqlserver";

    public static final ConfigKey DATABASE_URL = register(key("database.url", Type.JDBC_URL).required()
            .doc("JDBC URL of the database holding the outbox table; its prefix chooses the database (jdbc:postgresql: or jdbc:sqlserver:)."));
    public static final ConfigKey DATABASE_USERNAME = register(key("database.username", Type.STRING)
            .doc("Database user. When unset, the user in the URL (or the driver's default) applies."));
    public static final ConfigKey DATABASE_PASSWORD = register(key("database.password", Type.STRING).secret()
            .doc("Database password. Accepts a file: reference."));
    public static final ConfigKey DATABASE_PASSWORD_FILE = register(key("database.passwordFile", Type.PATH)
            .doc("File whose content (trailing line break removed) is the database password; wins over database.password."));
    public static final ConfigKey DATABASE_POOL_MAX_SIZE = register(key("database.pool.maxSize", Type.INTEGER)
            .defaultValue(10).range(1, 1000)
            .doc("Most connections in the delivery pool. Give it at least outbox.workers × outbox.pipelineDepth + 2."));
    public static final ConfigKey DATABASE_POOL_CONNECTION_TIMEOUT_MS = register(
            key("database.pool.connectionTimeoutMs", Type.MILLIS).defaultValue(5000).range(250, 600_000)
            .doc("How long a thread waits for a pooled connection before failing."));

    public static final ConfigKey DATABASE_SOCKET_TIMEOUT_MS = register(
            key("database.socketTimeoutMs", Type.MILLIS).defaultValue(30000).range(0, 3_600_000)
            .doc("Longest wait for the database's answer to one statement of the relay (claim, outcome, renewal,"
                    + " purge, capture state) before the connection is given up, so that a network that drops"
                    + " packets without closing the connection is noticed; rounded up to whole seconds, 0 waits"
                    + " forever. The server cancels the statement a second earlier (statement_timeout), so it is rolled"
                    + " back rather than left running. Operator commands such as migrate are not bounded."));

    public static final ConfigKey OUTBOX_SCHEMA = register(key("outbox.schema", Type.TABLE_NAME).defaultFromDatabase()
            .doc("Schema of the outbox table and of QueueBox's own tables."));
    public static final ConfigKey OUTBOX_TABLE = register(key("outbox.table", Type.TABLE_NAME).defaultValue("queuebox_outbox")
            .doc("Name of the outbox table (its indexes are named after it, so it is shorter than other names)."));
    public static final ConfigKey OUTBOX_POLL_INTERVAL_MS = register(key("outbox.pollIntervalMs", Type.MILLIS)
            .defaultValue(DeliverySettings.DEFAULT_WAKE_INTERVAL.toMillis()).range(10, 3_600_000)
            .doc("The longest delivery waits before looking for new rows when nothing wakes it (outbox.wake.mode poll,"
                    + " no capture), and while the insert listener or capture is down."));
    public static final ConfigKey WAKE_MODE = register(key("outbox.wake.mode", Type.CHOICE)
            .defaultValue("poll").allowed("poll", "notify")
            .doc("What wakes delivery when capture does not: poll looks every outbox.pollIntervalMs; notify LISTENs for"
                    + " the notification the outbox table's trigger sends at each commit of inserted rows and looks every"
                    + " outbox.wake.reconciliationIntervalMs (PostgreSQL only: migrate enables the trigger of schema"
                    + " version 4, which costs small writer transactions more than half their commit rate; a connection"
                    + " of its own, which a transaction-mode pooler such as PgBouncer's cannot carry)."));
    public static final ConfigKey WAKE_RECONCILIATION_INTERVAL_MS = register(
            key("outbox.wake.reconciliationIntervalMs", Type.MILLIS).defaultValue(30_000).range(100, 3_600_000)
            .doc("outbox.wake.mode notify: the longest delivery waits without a notification while the listener"
                    + " listens; while it does not, delivery polls every outbox.pollIntervalMs."));
    public static final ConfigKey OUTBOX_BATCH_SIZE = register(key("outbox.batchSize", Type.INTEGER)
            .defaultValue(DeliverySettings.DEFAULT_BATCH_SIZE).range(1, 10_000)
            .doc("Most rows one claim takes."));
    public static final ConfigKey OUTBOX_WORKERS = register(key("outbox.workers", Type.INTEGER)
            .defaultValue(DeliverySettings.DEFAULT_WORKERS).range(1, 256)
            .doc("Publishing workers (threads) in this process."));
    public static final ConfigKey OUTBOX_PIPELINE_DEPTH = register(key("outbox.pipelineDepth", Type.INTEGER)
            .defaultValue(DeliverySettings.DEFAULT_PIPELINE_DEPTH).range(1, DeliverySettings.MAX_PIPELINE_DEPTH)
            .doc("Batches one worker may have claimed and not yet recorded: 1 (the default) is the serial loop; 2 claims"
                    + " the next batch while a publish thread of the worker publishes the last, and a record thread marks a"
                    + " cleanly published batch sent while the next is published; 3 also lets the claim after next overlap"
                    + " that mark. Each step leases one more batch per worker (with outbox.holdRowLocks, holds one more"
                    + " connection)."));
    public static final ConfigKey OUTBOX_LEASE_MS = register(key("outbox.leaseMs", Type.MILLIS)
            .defaultValue(DeliverySettings.DEFAULT_LEASE_LENGTH.toMillis()).range(1000, 3_600_000)
            .doc("How long a claim holds its rows (renewed every third of it while a publish runs); another relay may"
                    + " take them after it expires, so a relay killed with kill -9 holds its rows back at most this long."));
    public static final ConfigKey OUTBOX_ORDERING = register(key("outbox.ordering", Type.CHOICE)
            .defaultValue(DeliverySettings.DEFAULT_ORDERING == Ordering.NONE ? "none" : "per-aggregate").allowed("per-aggregate", "none")
            .doc("per-aggregate keeps the events of one aggregate in write order; none trades order for throughput."));
    public static final ConfigKey OUTBOX_PARKING = register(key("outbox.parking", Type.CHOICE)
            .defaultValue(DeliverySettings.DEFAULT_PARKING_POLICY == ParkingPolicy.CONTINUE_AGGREGATE ? "continue-aggregate" : "hold-aggregate").allowed("hold-aggregate", "continue-aggregate")
            .doc("Whether a parked event holds back the later events of its aggregate (ordering per-aggregate only)."));
    public static final ConfigKey OUTBOX_DELETE_ON_SEND = register(key("outbox.deleteOnSend", Type.BOOLEAN)
            .defaultValue(false)
            .doc("Delete a row once the broker confirmed it, instead of marking it sent and purging it later."));
    public static final ConfigKey OUTBOX_HOLD_ROW_LOCKS = register(key("outbox.holdRowLocks", Type.BOOLEAN)
            .defaultFromDatabase()
            .doc("true: a claim holds its rows by their row locks, in a transaction kept open on its own connection until"
                    + " each row has its outcome: one row write per message, and a relay that dies frees its rows"
                    + " when its connection closes (outbox.leaseMs becomes the transaction's"
                    + " idle_in_transaction_session_timeout and tcp_user_timeout on PostgreSQL, and the store's own"
                    + " deadline on SQL Server, which closes the claim's connection; either frees the rows of a relay"
                    + " that stops answering). false writes a lease on every claimed row: for a pooler in statement"
                    + " mode, which cannot keep a claim's transaction open (transaction mode pins a server connection"
                    + " per batch in flight). Each batch in flight holds a connection of database.pool. On SQL Server"
                    + " it has never run against a real server (docs/reference/sqlserver.md), hence its default false."));
    public static final ConfigKey OUTBOX_MAX_PAYLOAD_BYTES = register(key("outbox.maxPayloadBytes", Type.INTEGER)
            .range(1, Integer.MAX_VALUE)
            .doc("Largest payload delivered, when set: a row with a larger one is parked at claim with its size and"
                    + " this limit. Unset, the relay leaves sizes to the broker: a message over its limit (Kafka"
                    + " max.request.size, RabbitMQ max_message_size) fails at publish and is parked, as a permanent"
                    + " failure or after outbox.retry.maxAttempts. Set it no lower than the maxPayloadBytes of the"
                    + " applications' writers (1 MiB unless they set it)."));

    public static final ConfigKey RETRY_INITIAL_MS = register(key("outbox.retry.initialMs", Type.MILLIS)
            .defaultValue(RetryPolicy.DEFAULT_INITIAL_DELAY.toMillis()).range(1, 86_400_000)
            .doc("Delay before the first retry of a failed event."));
    public static final ConfigKey RETRY_MULTIPLIER = register(key("outbox.retry.multiplier", Type.DECIMAL)
            .defaultValue(RetryPolicy.DEFAULT_MULTIPLIER).range(1.0, 100.0)
            .doc("Factor applied to the delay after each failed attempt."));
    public static final ConfigKey RETRY_MAX_MS = register(key("outbox.retry.maxMs", Type.MILLIS)
            .defaultValue(RetryPolicy.DEFAULT_MAX_DELAY.toMillis()).range(1, 86_400_000)
            .doc("Longest delay between two attempts; must not be below outbox.retry.initialMs."));
    public static final ConfigKey RETRY_JITTER = register(key("outbox.retry.jitter", Type.DECIMAL)
            .defaultValue(RetryPolicy.DEFAULT_JITTER).range(0.0, 1.0)
            .doc("Random spread of each delay, as a fraction of it (0.2 = plus or minus 20 %)."));
    public static final ConfigKey RETRY_MAX_ATTEMPTS = register(key("outbox.retry.maxAttempts", Type.INTEGER)
            .defaultValue(RetryPolicy.DEFAULT_MAX_ATTEMPTS).range(1, 1_000_000)
            .doc("Attempts after which a retriable failure parks the event."));

    public static final ConfigKey RETENTION_SENT_HOURS = register(key("outbox.retention.sentHours", Type.INTEGER)
            .defaultValue(DeliverySettings.DEFAULT_PURGE_RETENTION.toHours()).range(0, 87_600)
            .doc("How long sent rows are kept before the purge deletes them."));
    public static final ConfigKey PURGE_ENABLED = register(key("outbox.purge.enabled", Type.BOOLEAN)
            .defaultValue(DeliverySettings.DEFAULT_PURGE_ENABLED)
            .doc("Whether this process purges sent rows older than outbox.retention.sentHours."));
    public static final ConfigKey PURGE_INTERVAL_MS = register(key("outbox.purge.intervalMs", Type.MILLIS)
            .defaultValue(DeliverySettings.DEFAULT_PURGE_INTERVAL.toMillis()).range(1000, 86_400_000)
            .doc("How often the purge runs."));
    public static final ConfigKey PURGE_BATCH_SIZE = register(key("outbox.purge.batchSize", Type.INTEGER)
            .defaultValue(DeliverySettings.DEFAULT_PURGE_BATCH_SIZE).range(1, 100_000)
            .doc("Most rows one purge transaction deletes."));

    public static final ConfigKey CAPTURE_ENABLED = register(key("outbox.capture.enabled", Type.BOOLEAN)
            .defaultValue(false)
            .doc("Whether this process runs the capture connector (only one process per capture identity may)."));
    public static final ConfigKey CAPTURE_MODE = register(key("outbox.capture.mode", Type.CHOICE)
            .defaultValue("polling").allowed("polling", "postgres-logical", "sqlserver-cdc")
            .doc("How delivery learns about new rows: polling, or the database log (postgres-logical on PostgreSQL, sqlserver-cdc on SQL Server)."));
    public static final ConfigKey CAPTURE_RECONCILIATION_INTERVAL_MS = register(
            key("outbox.capture.reconciliationIntervalMs", Type.MILLIS).defaultValue(30_000).range(100, 3_600_000)
            .doc("Capture mode: the longest delivery waits without a capture event."));
    public static final ConfigKey CAPTURE_STATE_DIRECTORY = register(key("outbox.capture.stateDirectory", Type.PATH)
            .defaultValue("/var/lib/queuebox/capture")
            .doc("Durable directory for offsets.dat, history.dat and identity."));
    public static final ConfigKey CAPTURE_SLOT = register(key("outbox.capture.slot", Type.IDENTIFIER)
            .defaultValue("queuebox_slot").onlyFor(POSTGRESQL)
            .doc("PostgreSQL replication slot; the connector creates it on first start, QueueBox never drops it."));
    public static final ConfigKey CAPTURE_PUBLICATION = register(key("outbox.capture.publication", Type.IDENTIFIER)
            .defaultValue("queuebox_publication").onlyFor(POSTGRESQL)
            .doc("PostgreSQL publication on the outbox table; you create it, QueueBox never does."));
    public static final ConfigKey CAPTURE_POLL_INTERVAL_MS = register(key("outbox.capture.pollIntervalMs", Type.MILLIS)
            .defaultValue(20).range(1, 10_000)
            .doc("How long the connector waits for new log entries before looking again: the capture latency floor."));
    public static final ConfigKey CAPTURE_HEARTBEAT_INTERVAL_MS = register(
            key("outbox.capture.heartbeatIntervalMs", Type.MILLIS).defaultValue(10_000).range(100, 3_600_000)
            .doc("Heartbeat of the connector, so the slot advances on a busy database while the outbox is quiet."));
    public static final ConfigKey CAPTURE_OFFSET_FLUSH_INTERVAL_MS = register(
            key("outbox.capture.offsetFlushIntervalMs", Type.MILLIS).defaultValue(5000).range(100, 3_600_000)
            .doc("How often offsets.dat is written; after a crash at most this much is re-read (a spurious wake-up)."));
    public static final ConfigKey CAPTURE_SNAPSHOT_MODE = register(key("outbox.capture.snapshotMode", Type.CHOICE)
            .defaultValue("no_data").allowed("no_data", "initial")
            .doc("no_data streams from now on (delivery finds existing rows through SQL); initial is for a documented recovery."));
    public static final ConfigKey CAPTURE_RETAINED_WAL_WARN_BYTES = register(
            key("outbox.capture.retainedWalWarnBytes", Type.INTEGER).defaultValue(1_073_741_824L).range(1, 1e15)
            .onlyFor(POSTGRESQL)
            .doc("Log a warning when the slot holds back this much WAL (metric queuebox_capture_retained_wal_bytes): a slot nobody reads fills the disk."));
    public static final ConfigKey CAPTURE_SQLSERVER_ENCRYPT = register(
            key("outbox.capture.sqlserver.encrypt", Type.BOOLEAN).defaultValue(true).onlyFor(SQLSERVER)
            .doc("Whether the capture connector encrypts its connection (Debezium database.encrypt, passed to mssql-jdbc)."));
    public static final ConfigKey CAPTURE_SQLSERVER_TRUST_SERVER_CERTIFICATE = register(
            key("outbox.capture.sqlserver.trustServerCertificate", Type.BOOLEAN).defaultValue(false).onlyFor(SQLSERVER)
            .doc("Whether the capture connector accepts any server certificate (Debezium database.trustServerCertificate): test servers only."));
    public static final ConfigKey CAPTURE_HOST = register(key("outbox.capture.connection.host", Type.STRING)
            .doc("Host of every capture connection (connector, session lock, state table, source checks); defaults to the host in database.url."));
    public static final ConfigKey CAPTURE_PORT = register(key("outbox.capture.connection.port", Type.INTEGER)
            .range(1, 65_535).doc("Capture connection port; defaults to the port in database.url."));
    public static final ConfigKey CAPTURE_DATABASE = register(key("outbox.capture.connection.database", Type.STRING)
            .doc("Capture connection database; defaults to the database in database.url."));
    public static final ConfigKey CAPTURE_USERNAME = register(key("outbox.capture.connection.username", Type.STRING)
            .doc("Capture connection user; defaults to database.username."));
    public static final ConfigKey CAPTURE_PASSWORD = register(key("outbox.capture.connection.password", Type.STRING)
            .secret().doc("Capture connection password; defaults to database.password. Accepts a file: reference."));
    public static final ConfigKey CAPTURE_PASSWORD_FILE = register(
            key("outbox.capture.connection.passwordFile", Type.PATH)
            .doc("File holding the capture connection password; wins over outbox.capture.connection.password."));
    public static final ConfigKey CAPTURE_POOL_MAX_SIZE = register(key("outbox.capture.pool.maxSize", Type.INTEGER)
            .defaultValue(3).range(2, 20)
            .doc("Connections of the small capture pool (on the capture connection): capture state, source checks and the session lock."));

    public static final ConfigKey BROKER_TYPE = register(key("broker.type", Type.STRING).required()
            .doc("Broker provider name: kafka, rabbitmq, or the name of a custom provider on the class path."));

    public static final ConfigKey HTTP_PORT = register(key("http.port", Type.INTEGER).defaultValue(8080).range(0, 65_535)
            .doc("Port of the health and metrics endpoints; 0 picks a free port."));
    public static final ConfigKey HTTP_HOST = register(key("http.host", Type.STRING).defaultValue("0.0.0.0")
            .doc("Address the HTTP endpoints bind to."));
    public static final ConfigKey CONSOLE_ENABLED = register(key("console.enabled", Type.BOOLEAN).defaultValue(false)
            .doc("Serve the operator console at /console on the HTTP port (docs/operations.md#console). Off, no /console"
                    + " path answers and nothing more listens."));
    public static final ConfigKey CONSOLE_ALLOW_REMOTE = register(key("console.allowRemote", Type.BOOLEAN).defaultValue(false)
            .doc("Whether the console answers clients that are not on this host; false refuses every non-loopback"
                    + " address with 403, whatever http.host binds (reach it through an SSH tunnel or a proxy on the host)."));
    public static final ConfigKey CONSOLE_ALLOWED_HOSTS = register(key("console.allowedHosts", Type.STRING)
            .doc("Comma-separated host or host:port names the console is also served under (an SSH tunnel's, a proxy's);"
                    + " a request whose Host, or a change whose Origin, names another host is refused with 421 (the DNS"
                    + " rebinding defence). Without console.allowRemote the loopback names (localhost, 127.x.x.x, [::1])"
                    + " are always allowed; with it, only these, and the key is required."));
    public static final ConfigKey CONSOLE_ADMIN_TOKEN = register(key("console.adminToken", Type.STRING).secret()
            .doc("Bearer token every change made from the console (replay) requires, at least 16 characters. Unset, the"
                    + " console is read-only: replay answers 403. Accepts a file: reference."));
    public static final ConfigKey CONSOLE_READ_REQUIRES_TOKEN = register(
            key("console.readRequiresToken", Type.BOOLEAN).defaultValue(false)
            .doc("Whether the console's read-only views need a bearer token (console.readToken or console.adminToken);"
                    + " false leaves them open to whoever reaches the console."));
    public static final ConfigKey CONSOLE_READ_TOKEN = register(key("console.readToken", Type.STRING).secret()
            .doc("Bearer token for the read-only views when console.readRequiresToken is true, at least 16 characters."
                    + " Accepts a file: reference."));
    public static final ConfigKey CONSOLE_SAMPLE_INTERVAL_MS = register(
            key("console.sampleIntervalMs", Type.MILLIS).defaultValue(5000).range(1000, 60_000)
            .doc("How often the console's charts take a point (the last hour is kept in memory; the backlog points"
                    + " read the backlog gauges, refreshed every metrics.backlogSampleIntervalMs)."));
    public static final ConfigKey METRICS_BACKLOG_SAMPLE_MS = register(
            key("metrics.backlogSampleIntervalMs", Type.MILLIS).defaultValue(15_000).range(1000, 3_600_000)
            .doc("How often the backlog gauges are refreshed from the database (never on the scrape path)."));

    public static final ConfigKey LOG_FORMAT = register(key("log.format", Type.CHOICE).defaultValue("text")
            .allowed("text", "json").doc("text for people, json for one JSON object per line (logback's JsonEncoder). Both log keys are unused when -Dlogback.configurationFile names a logback file of the operator's."));
    public static final ConfigKey LOG_LEVEL = register(key("log.level", Type.CHOICE).defaultValue("INFO")
            .allowed("TRACE", "DEBUG", "INFO", "WARN", "ERROR").doc("Level of QueueBox's own loggers."));

    public static final ConfigKey SHUTDOWN_DEADLINE_MS = register(key("shutdown.deadlineMs", Type.MILLIS)
            .defaultValue(DeliverySettings.DEFAULT_SHUTDOWN_DEADLINE.toMillis()).range(0, 3_600_000)
            .doc("On SIGTERM: how long in-flight publishes may take before their leases are released anyway."));
    public static final ConfigKey STARTUP_DATABASE_WAIT_MS = register(key("startup.databaseWaitMs", Type.MILLIS)
            .defaultValue(60_000).range(0, 3_600_000)
            .doc("How long start waits for the database (retrying with backoff) before exiting with code 3."));

    public static final ConfigKey INSTANCE_NAME = register(key("instance.name", Type.STRING)
            .doc("Name recorded on claimed rows and in logs; defaults to host name and process id."));

    private static Map<String, ConfigKey> all;

    private Keys() {
    }

    private static ConfigKey register(ConfigKey.Builder builder) {
        if (all == null) {
            all = new LinkedHashMap<>();
        }
        ConfigKey key = builder.build();
        all.put(key.name(), key);
        return key;
    }

    /** Every fixed key, in documentation order. */
    public static Collection<ConfigKey> all() {
        return java.util.Collections.unmodifiableCollection(all.values());
    }

    public static Optional<ConfigKey> find(String name) {
        return Optional.ofNullable(all.get(name));
    }

    /** Whether the key belongs to a broker provider's settings ({@code broker.<type>.<setting>}). */
    public static boolean isBrokerSetting(String name) {
        return name.startsWith(BROKER_PREFIX) && name.indexOf('.', BROKER_PREFIX.length()) > BROKER_PREFIX.length()
                && !all.containsKey(name);
    }

    /** Whether a key's value is a secret: a listed secret, or a broker setting whose name says so. */
    public static boolean isSecret(String name) {
        ConfigKey key = all.get(name);
        if (key != null) {
            return key.secret();
        }
        if (!isBrokerSetting(name)) {
            return false;
        }
        return Masking.looksSecret(name);
    }
}
