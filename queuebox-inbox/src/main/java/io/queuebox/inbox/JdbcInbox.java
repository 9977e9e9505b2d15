package io.queuebox.inbox;

import io.queuebox.ports.Inbox;
import io.queuebox.ports.InboxHandler;
import io.queuebox.ports.InboxKey;
import io.queuebox.ports.InboxOutcome;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * The inbox on PostgreSQL or SQL Server, in the application's own JDBC transaction: the one entry type of this
 * module's database side. Safe for concurrent use; it holds no connection.
 *
 * <h2>The table</h2>
 * One row per (consumer, event id), shipped as a Flyway script at {@link InboxDatabase#schemaLocation()} with the
 * placeholders {@value #SCHEMA_PLACEHOLDER} and {@value #TABLE_PLACEHOLDER}. Its version is {@code V1}, like the
 * outbox's first script, so give it a Flyway history table of its own (or copy it into your migrations);
 * {@link #createSchema} runs it without Flyway. The scripts ship here rather than in the SQL adapters: a consuming
 * service needs the inbox without the relay's adapters, and the inbox's schema has versions of its own.
 *
 * <h2>Processing</h2>
 * <pre>{@code
 * connection.setAutoCommit(false);
 * InboxOutcome outcome = inbox.process(connection, new InboxKey("billing", eventId), tx -> insertInvoice(tx, order));
 * connection.commit();   // then acknowledge the message to the broker
 * }</pre>
 * or {@link #processInNewTransaction}, which does exactly that on a connection of a {@link DataSource}.
 *
 * <h2>Purging</h2>
 * {@link #purgeAll} deletes entries older than a retention in transactions of a bounded size.
 */
public final class JdbcInbox implements Inbox<Connection> {

    /** The Flyway placeholder of the schema: {@value}, shared with the outbox's scripts. */
    public static final String SCHEMA_PLACEHOLDER = "queuebox_schema";
    /** The Flyway placeholder of the inbox table: {@value}; the outbox's scripts use {@code queuebox_table}. */
    public static final String TABLE_PLACEHOLDER = "queuebox_inbox_table";

    private final InboxSettings settings;
    private final InboxDialect dialect;
    private final String recordSql;
    private final String purgeSql;

    private JdbcInbox(InboxSettings settings) {
        this.settings = settings;
        this.dialect = settings.database().dialect();
        String table = dialect.qualified(settings.schema(), settings.table());
        this.recordSql = dialect.recordSql(table);
        this.purgeSql = dialect.purgeSql(table);
    }

    /** An inbox on the table {@code settings} name; the table must exist before the first call ({@link #createSchema}). */
    public static JdbcInbox create(InboxSettings settings) {
        return new JdbcInbox(Objects.requireNonNull(settings, "settings"));
    }

    public InboxSettings settings() {
        return settings;
    }

    /** Creates the schema, the inbox table and its index if missing, with the shipped script; one transaction. */
    public void createSchema(DataSource dataSource) {
        dialect.scripts.apply(Objects.requireNonNull(dataSource, "dataSource"), placeholders(),
                "the inbox table " + settings.displayName());
    }

    /** The shipped script with the placeholders filled in from the settings, to copy into your own migrations. */
    public String renderSchemaScript() {
        return dialect.scripts.render(InboxDialect.SCRIPT, placeholders());
    }

    /**
     * {@inheritDoc}
     *
     * @throws IllegalStateException if {@code transaction} is in auto-commit mode: the entry would commit on its own
     *         before the handler ran, and a crash then would lose the event
     * @throws InboxDatabaseException if the database refuses the insert (a missing table, a lost connection)
     */
    @Override
    public InboxOutcome process(Connection transaction, InboxKey key, InboxHandler<Connection> handler)
            throws Exception {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(handler, "handler");
        requireTransaction(transaction);
        if (!record(transaction, key)) {
            return InboxOutcome.DUPLICATE;
        }
        handler.handle(transaction);
        return InboxOutcome.PROCESSED;
    }

    /**
     * {@link #process} in a transaction of its own on a connection from {@code dataSource}: commits after the
     * handler returned, rolls back (and throws what was thrown) otherwise, and closes the connection. When this
     * returns, the entry and the handler's writes are committed: acknowledge the message then.
     */
    public InboxOutcome processInNewTransaction(DataSource dataSource, InboxKey key, InboxHandler<Connection> handler)
            throws Exception {
        Objects.requireNonNull(dataSource, "dataSource");
        try (Connection connection = dataSource.getConnection()) {
            connection.setAutoCommit(false);
            try {
                InboxOutcome outcome = process(connection, key, handler);
                connection.commit();
                return outcome;
            } catch (Exception | Error e) {
                rollback(connection, e);
                throw e;
            }
        }
    }

    @Override
    public int purge(Connection transaction, Duration retention, int maxEntries) {
        Objects.requireNonNull(retention, "retention");
        if (retention.isNegative()) {
            throw new IllegalArgumentException("retention: must not be negative, got: " + retention);
        }
        if (maxEntries < 1) {
            throw new IllegalArgumentException("maxEntries: must be at least 1, got: " + maxEntries);
        }
        Objects.requireNonNull(transaction, "transaction");
        try (PreparedStatement statement = transaction.prepareStatement(purgeSql)) {
            dialect.purgeBinder.bind(statement, retention, maxEntries);
            return statement.executeUpdate();
        } catch (SQLException e) {
            throw new InboxDatabaseException("inbox " + settings.displayName() + ": could not purge: " + e.getMessage(), e);
        }
    }

    /**
     * Deletes every entry older than {@code retention}, at most {@code maxEntriesPerTransaction} per transaction
     * (each committed before the next starts, so a large backlog never holds locks for long); answers how many.
     */
    public long purgeAll(DataSource dataSource, Duration retention, int maxEntriesPerTransaction) {
        Objects.requireNonNull(dataSource, "dataSource");
        long total = 0;
        int deleted;
        do {
            try (Connection connection = dataSource.getConnection()) {
                connection.setAutoCommit(false);
                try {
                    deleted = purge(connection, retention, maxEntriesPerTransaction);
                    connection.commit();
                } catch (RuntimeException | SQLException e) {
                    rollback(connection, e);
                    throw e;
                }
            } catch (SQLException e) {
                throw new InboxDatabaseException("inbox " + settings.displayName() + ": could not purge: "
                        + e.getMessage(), e);
            }
            total += deleted;
        } while (deleted == maxEntriesPerTransaction);
        return total;
    }

    private boolean record(Connection transaction, InboxKey key) {
        try (PreparedStatement statement = transaction.prepareStatement(recordSql)) {
            dialect.recordBinder.bind(statement, key.consumer(), key.eventId());
            return statement.executeUpdate() == 1;
        } catch (SQLException e) {
            if (dialect.isDuplicateKey(e)) {
                return false;
            }
            throw new InboxDatabaseException("inbox " + settings.displayName() + ": could not record event "
                    + key.eventId() + " of consumer '" + key.consumer() + "': " + e.getMessage(), e);
        }
    }

    private void requireTransaction(Connection transaction) {
        Objects.requireNonNull(transaction, "transaction");
        boolean autoCommit;
        try {
            autoCommit = transaction.getAutoCommit();
        } catch (SQLException e) {
            throw new InboxDatabaseException("inbox " + settings.displayName() + ": the connection is not usable: "
                    + e.getMessage(), e);
        }
        if (autoCommit) {
            throw new IllegalStateException("inbox " + settings.displayName() + ": the connection is in auto-commit"
                    + " mode, so the inbox entry would commit before the handler ran: call setAutoCommit(false), then"
                    + " commit after process (or use processInNewTransaction)");
        }
    }

    private static void rollback(Connection connection, Throwable cause) {
        try {
            connection.rollback();
        } catch (SQLException e) {
            cause.addSuppressed(e);
        }
    }

    private Map<String, String> placeholders() {
        return Map.of(SCHEMA_PLACEHOLDER, settings.schema(), TABLE_PLACEHOLDER, settings.table());
    }
}
