package io.queuebox.postgres;

import io.queuebox.jdbc.DedicatedConnectionLock;
import io.queuebox.jdbc.TransactionWriters;
import io.queuebox.ports.CaptureLock;
import io.queuebox.ports.CaptureSourceInspector;
import io.queuebox.ports.CaptureStateStore;
import io.queuebox.ports.InsertNotifications;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.OutboxWriter;
import java.sql.Connection;
import java.util.List;
import java.util.Objects;
import java.util.Properties;
import javax.sql.DataSource;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;

/**
 * The PostgreSQL adapter of QueueBox: the one entry point to the outbox table, its writer, its store, and
 * the capture pieces. Everything it returns is safe for concurrent use.
 *
 * <h2>The schema</h2>
 * The table and its indexes ship as Flyway scripts in {@value #SCHEMA_LOCATION} (add
 * {@code classpath:db/queuebox/postgres} to your Flyway locations, with the placeholders
 * {@code queuebox_schema} and {@code queuebox_table}), or copy them into your own migrations.
 * {@link #createSchema} runs the same scripts without Flyway.
 *
 * <h2>Writing</h2>
 * {@link #jdbcWriter} and {@link #jdbiWriter} insert events in the caller's transaction: they never commit,
 * roll back or close what they are given. A batch is one statement.
 *
 * <h2>Waking delivery on insert</h2>
 * Schema version 4 adds a trigger, disabled until {@link #insertNotifications(DataSource, PostgresOutboxSettings,
 * boolean)} enables it, that makes every insert notify the channel {@link PostgresOutboxSettings#notifyChannel()}, once
 * per transaction; {@link #insertNotifications(String, Properties, PostgresOutboxSettings)} listens to it.
 *
 * <h2>Delivering</h2>
 * {@link #store} claims with {@code FOR UPDATE SKIP LOCKED} on the database clock; every call is one
 * statement in its own short transaction, on connections it borrows from the data source.
 */
public final class PostgresOutbox {

    /** Classpath location of the Flyway scripts: {@value}. */
    public static final String SCHEMA_LOCATION = SchemaScripts.LOCATION;

    private PostgresOutbox() {
    }

    /**
     * Creates the schema, the outbox table, its indexes and {@code queuebox_capture_state}, if missing, by
     * running the shipped scripts with the placeholders filled in from {@code settings}. For tests and for
     * applications without Flyway; one transaction.
     */
    public static void createSchema(DataSource dataSource, PostgresOutboxSettings settings) {
        SchemaScripts.apply(Objects.requireNonNull(dataSource, "dataSource"), Objects.requireNonNull(settings, "settings"));
    }

    /**
     * The rights the connecting role lacks to deliver from an existing outbox table (USAGE on its schema;
     * SELECT, UPDATE, DELETE on the table), each as a sentence that names the role, the right and the GRANT
     * that gives it. Empty when nothing is missing or the table does not exist yet.
     */
    public static List<String> missingDeliveryRights(DataSource dataSource, PostgresOutboxSettings settings) {
        return Rights.missingForDelivery(Objects.requireNonNull(dataSource, "dataSource"),
                Objects.requireNonNull(settings, "settings"));
    }

    /**
     * The rights the connecting role lacks to create or upgrade the schema with the shipped scripts (CREATE on
     * the database for a missing schema, USAGE and CREATE on the schema for missing tables), as sentences
     * like {@link #missingDeliveryRights}.
     */
    public static List<String> missingMigrationRights(DataSource dataSource, PostgresOutboxSettings settings) {
        return Rights.missingForMigration(Objects.requireNonNull(dataSource, "dataSource"),
                Objects.requireNonNull(settings, "settings"));
    }

    /** The shipped scripts with the placeholders filled in, in order, for review or for your own migrations. */
    public static List<String> renderSchemaScripts(PostgresOutboxSettings settings) {
        return SchemaScripts.SCRIPTS.stream().map(script -> SchemaScripts.render(script, settings)).toList();
    }

    /** A writer that joins the transaction of a JDBC connection. */
    public static OutboxWriter<Connection> jdbcWriter(PostgresOutboxSettings settings) {
        return TransactionWriters.onConnection(new EventWriter(Objects.requireNonNull(settings, "settings"))::write);
    }

    /** A writer that joins the transaction of a Jdbi handle. */
    public static OutboxWriter<Handle> jdbiWriter(PostgresOutboxSettings settings) {
        return TransactionWriters.onHandle(new EventWriter(Objects.requireNonNull(settings, "settings"))::write);
    }

    /** The store on a data source (typically a pool). */
    public static OutboxStore store(DataSource dataSource, PostgresOutboxSettings settings) {
        return store(Jdbi.create(Objects.requireNonNull(dataSource, "dataSource")), settings);
    }

    /** The store on a Jdbi you configured (for example with your own SQL logger). */
    public static OutboxStore store(Jdbi jdbi, PostgresOutboxSettings settings) {
        return new PostgresOutboxStore(jdbi, Objects.requireNonNull(settings, "settings"));
    }

    /** The {@code queuebox_capture_state} table in the outbox's schema. */
    public static CaptureStateStore captureStateStore(DataSource dataSource, PostgresOutboxSettings settings) {
        return new PostgresCaptureStateStore(Jdbi.create(Objects.requireNonNull(dataSource, "dataSource")),
                Objects.requireNonNull(settings, "settings"));
    }

    /**
     * The capture owner's lock. Each acquisition opens a connection of its own from {@code dataSource} and
     * keeps it for as long as the lock is held, so give it a data source that opens real connections (or a
     * pool sized for one more connection per lock).
     */
    public static CaptureLock captureLock(DataSource dataSource) {
        Objects.requireNonNull(dataSource, "dataSource");
        return PostgresCaptureLock.on(dataSource::getConnection);
    }

    /** The capture owner's lock on connections opened from a JDBC URL (credentials in {@code properties}). */
    public static CaptureLock captureLock(String jdbcUrl, Properties properties) {
        return PostgresCaptureLock.on(DedicatedConnectionLock.ConnectionFactory.fromUrl(jdbcUrl, properties));
    }

    /**
     * The outbox's inserts as notifications: LISTEN on {@link PostgresOutboxSettings#notifyChannel()} on a
     * connection of its own, opened from a JDBC URL ({@code properties}: credentials, {@code ApplicationName};
     * copied, may be null) for every subscription and never taken from a pool. Needs the trigger of schema
     * version 4 ({@code V4__queuebox_insert_notify.sql}), enabled; a subscription to a table without it fails and
     * says so.
     * Give it to the domain's {@code InsertNotificationWakeSource}, which reconnects, reports health and wakes
     * the engine.
     */
    public static InsertNotifications insertNotifications(String jdbcUrl, Properties properties,
                                                          PostgresOutboxSettings settings) {
        return insertNotifications(DedicatedConnectionLock.ConnectionFactory.fromUrl(jdbcUrl, properties), settings);
    }

    /**
     * Enables ({@code true}) or disables the outbox's insert-notify trigger of schema version 4, which the script
     * creates disabled: while it is enabled every transaction that inserts into the table notifies, and PostgreSQL
     * commits such transactions one at a time (see docs/concepts/delivery.md for the measured cost). Runs
     * {@code ALTER TABLE ... ENABLE|DISABLE TRIGGER} (the table owner's right) only when the state differs.
     *
     * @return whether the state changed
     * @throws IllegalStateException when the table has no such trigger (schema below version 4)
     */
    public static boolean insertNotifications(DataSource dataSource, PostgresOutboxSettings settings, boolean enabled) {
        return NotifyTrigger.set(Objects.requireNonNull(dataSource, "dataSource"),
                Objects.requireNonNull(settings, "settings"), enabled);
    }

    /** {@link #insertNotifications(String, Properties, PostgresOutboxSettings)} on connections you open. */
    public static InsertNotifications insertNotifications(DedicatedConnectionLock.ConnectionFactory connections,
                                                          PostgresOutboxSettings settings) {
        return new PostgresInsertNotifications(connections, settings);
    }

    /** Checks wal_level, the replication slot and the publication before capture starts. */
    public static CaptureSourceInspector captureSourceInspector(DataSource dataSource) {
        return new PostgresCaptureSourceInspector(Objects.requireNonNull(dataSource, "dataSource"));
    }
}
