package io.queuebox.inbox;

import io.queuebox.jdbc.FlywayScripts;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.regex.Pattern;

/**
 * What differs between the databases, as data: names, scripts, the statement that records an entry and the one
 * that purges. {@link JdbcInbox} runs the same steps on both.
 */
final class InboxDialect {

    /** Binds the record statement's parameters. */
    @FunctionalInterface
    interface RecordBinder {
        void bind(PreparedStatement statement, String consumer, UUID eventId) throws SQLException;
    }

    /** Binds the purge statement's parameters. */
    @FunctionalInterface
    interface PurgeBinder {
        void bind(PreparedStatement statement, Duration retention, int maxEntries) throws SQLException;
    }

    /** SQL Server's duplicate key errors: a primary key (2627) or a unique index (2601). */
    private static final List<Integer> SQL_SERVER_DUPLICATE_KEY = List.of(2627, 2601);
    /** Flyway's batch separator for SQL Server: GO alone on its line. */
    private static final Pattern GO = Pattern.compile("(?im)^\\s*GO\\s*$");

    static final InboxDialect POSTGRESQL = new InboxDialect(
            "public",
            Pattern.compile("[a-z_][a-z0-9_]{0,62}"), 63,
            // The purge index is named <table>_purge_idx and must stay within PostgreSQL's 63 characters.
            Pattern.compile("[a-z_][a-z0-9_]{0,47}"), 48,
            "lower-case letters",
            "db/queuebox/inbox/postgres",
            List::of,
            identifier -> '"' + identifier + '"',
            // A concurrent inserter of the same key waits on the first one's row lock, then inserts nothing.
            "INSERT INTO %s (consumer, event_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
            (statement, consumer, eventId) -> {
                statement.setString(1, consumer);
                statement.setObject(2, eventId);
            },
            "DELETE FROM %1$s WHERE (consumer, event_id) IN (SELECT consumer, event_id FROM %1$s"
                    + " WHERE processed_at <= now() - ? * interval '1 millisecond'"
                    + " ORDER BY processed_at LIMIT ? FOR UPDATE SKIP LOCKED)",
            (statement, retention, maxEntries) -> {
                statement.setLong(1, retention.toMillis());
                statement.setInt(2, maxEntries);
            },
            // ON CONFLICT DO NOTHING never raises a duplicate key error.
            e -> false);

    static final InboxDialect SQL_SERVER = new InboxDialect(
            "dbo",
            Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,127}"), 128,
            // The purge index is named <table>_purge_idx within SQL Server's 128 characters.
            Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,99}"), 100,
            "letters",
            "db/queuebox/inbox/sqlserver",
            InboxDialect::batches,
            identifier -> '[' + identifier + ']',
            // UPDLOCK, HOLDLOCK keep the looked-up key (or the range where it would be) locked to the end of the
            // transaction, so a concurrent consumer waits here instead of both seeing "not there" and inserting.
            "INSERT INTO %1$s (consumer, event_id) SELECT ?, ? WHERE NOT EXISTS"
                    + " (SELECT 1 FROM %1$s WITH (UPDLOCK, HOLDLOCK) WHERE consumer = ? AND event_id = ?)",
            (statement, consumer, eventId) -> {
                statement.setString(1, consumer);
                statement.setString(2, eventId.toString());
                statement.setString(3, consumer);
                statement.setString(4, eventId.toString());
            },
            // DATEADD takes an int: whole seconds reach 68 years, milliseconds only 24 days.
            "WITH oldest AS (SELECT TOP (?) consumer, event_id FROM %s WITH (UPDLOCK, ROWLOCK, READPAST)"
                    + " WHERE processed_at <= DATEADD(millisecond, -?, DATEADD(second, -?, SYSUTCDATETIME()))"
                    + " ORDER BY processed_at) DELETE FROM oldest",
            (statement, retention, maxEntries) -> {
                statement.setInt(1, maxEntries);
                statement.setInt(2, retention.toMillisPart());
                statement.setInt(3, Math.toIntExact(retention.toSeconds()));
            },
            e -> SQL_SERVER_DUPLICATE_KEY.contains(e.getErrorCode()));

    static final String SCRIPT = "V1__queuebox_inbox.sql";

    final String defaultSchema;
    final Pattern schemaPattern;
    final int maxSchemaLength;
    final Pattern tablePattern;
    final int maxTableLength;
    final String letters;
    final String location;
    final FlywayScripts scripts;
    private final Function<String, String> quote;
    private final String recordTemplate;
    final RecordBinder recordBinder;
    private final String purgeTemplate;
    final PurgeBinder purgeBinder;
    private final Predicate<SQLException> duplicateKey;

    private InboxDialect(String defaultSchema, Pattern schemaPattern, int maxSchemaLength, Pattern tablePattern,
            int maxTableLength, String letters, String location, Function<String, List<String>> statements,
            Function<String, String> quote, String recordTemplate, RecordBinder recordBinder, String purgeTemplate,
            PurgeBinder purgeBinder, Predicate<SQLException> duplicateKey) {
        this.defaultSchema = defaultSchema;
        this.schemaPattern = schemaPattern;
        this.maxSchemaLength = maxSchemaLength;
        this.tablePattern = tablePattern;
        this.maxTableLength = maxTableLength;
        this.letters = letters;
        this.location = location;
        this.scripts = new FlywayScripts(InboxDialect.class.getClassLoader(), location, List.of(SCRIPT), statements);
        this.quote = quote;
        this.recordTemplate = recordTemplate;
        this.recordBinder = recordBinder;
        this.purgeTemplate = purgeTemplate;
        this.purgeBinder = purgeBinder;
        this.duplicateKey = duplicateKey;
    }

    String qualified(String schema, String table) {
        return quote.apply(schema) + "." + quote.apply(table);
    }

    String recordSql(String qualifiedTable) {
        return String.format(recordTemplate, qualifiedTable);
    }

    String purgeSql(String qualifiedTable) {
        return String.format(purgeTemplate, qualifiedTable);
    }

    boolean isDuplicateKey(SQLException e) {
        return duplicateKey.test(e);
    }

    /** The batches of a rendered SQL Server script, without the GO separators and without empty batches. */
    static List<String> batches(String renderedScript) {
        List<String> batches = new ArrayList<>();
        for (String batch : GO.split(renderedScript)) {
            if (!batch.replaceAll("(?m)--.*$", "").isBlank()) {
                batches.add(batch.strip());
            }
        }
        return batches;
    }
}
