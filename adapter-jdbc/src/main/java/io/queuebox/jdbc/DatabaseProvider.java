package io.queuebox.jdbc;

import io.queuebox.ports.CaptureMode;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * A database QueueBox can deliver from, found through {@link java.util.ServiceLoader}: list the class in
 * {@code META-INF/services/io.queuebox.jdbc.DatabaseProvider}, and the bootstrap jar uses it for every
 * {@code database.url} it {@link #accepts}. Everything that differs between databases and that the jar needs
 * beyond SQL text comes from here: the adapter pieces, the schema scripts, URL parsing, identifier rules and
 * defaults. Implementations are stateless and safe for concurrent use.
 */
public interface DatabaseProvider {

    /** The name used in configuration and in the reference, for example {@code postgresql}. Lower case, unique. */
    String name();

    /** The database's name for people, for example {@code PostgreSQL}. */
    String displayName();

    /** Whether this provider handles the JDBC URL, for example by its {@code jdbc:postgresql:} prefix. */
    boolean accepts(String jdbcUrl);

    /** A URL that {@link #accepts} and that error messages can show as an example. */
    String exampleUrl();

    /** The capture mode that reads this database's log, for example {@link CaptureMode#POSTGRES_LOGICAL}. */
    CaptureMode captureMode();

    /**
     * Whether the database can wake delivery when rows are inserted ({@code outbox.wake.mode: notify}):
     * {@link OutboxDatabase#insertNotifications} then returns them. The default is false.
     */
    default boolean notifiesInserts() {
        return false;
    }

    /**
     * Whether claims hold their rows by row locks ({@code outbox.holdRowLocks}) when the key is not set: a database
     * whose claims have run that way against a real server under the store contract and the fault suite. The
     * default is false (a lease written on every claimed row).
     */
    default boolean holdsRowLocksByDefault() {
        return false;
    }

    /** The schema of the outbox when {@code outbox.schema} is not set. */
    String defaultSchema();

    /**
     * Checks the outbox table settings by this database's identifier rules.
     *
     * @return the problem, a sentence starting with the key at fault ({@code outbox.schema: ...}); empty when valid
     */
    Optional<String> outboxTableProblem(OutboxTable table);

    /** The rules {@link #outboxTableProblem} applies, in words, for the configuration reference. */
    String identifierRules();

    /**
     * Host, port and database of a URL this provider {@link #accepts} (its first host when it lists several).
     *
     * @throws IllegalArgumentException naming {@code database.url} when the URL cannot be parsed
     */
    DatabaseLocation locate(String jdbcUrl);

    /**
     * The URL with its host, port and database replaced, every other property kept: how capture reaches a
     * replica or another host given in {@code outbox.capture.connection.*}.
     */
    String relocate(String jdbcUrl, DatabaseLocation location);

    /**
     * The URL without the account written in it ({@code user}, {@code password} and their synonyms): the
     * drivers let a URL's account win over the one given separately, which would silently replace an account
     * configured for capture.
     */
    String withoutAccount(String jdbcUrl);

    /** The value of a property written in the URL, such as {@code user}, when there is one. */
    Optional<String> urlProperty(String jdbcUrl, String name);

    /**
     * Driver properties of the relay's pools: how long the driver waits for the answer to one statement,
     * and that the server gives up first, so a silent network fails the statement instead of hanging.
     *
     * @param socketTimeoutMillis the longest wait for one statement; 0 waits forever
     * @param applicationName     the name the database shows for these sessions
     */
    Map<String, String> connectionProperties(long socketTimeoutMillis, String applicationName);

    /**
     * Whether {@link #connectionProperties} can bound statements at this socket timeout; the problem says what
     * is allowed. The default accepts every value.
     */
    default Optional<String> socketTimeoutProblem(long socketTimeoutMillis) {
        return Optional.empty();
    }

    /**
     * Whether a failed connection is a refusal that no wait fixes (a login or database the server refused), as
     * opposed to a database that is not up yet. The default reads the standard SQLSTATE classes: 28 (invalid
     * authorization) and 3D000 (invalid catalog name).
     */
    default Optional<ConnectRefusal> refusal(SQLException error) {
        String state = error.getSQLState();
        if (state == null) {
            return Optional.empty();
        }
        if (state.startsWith("28")) {
            return Optional.of(ConnectRefusal.ACCOUNT);
        }
        return state.equals("3D000") ? Optional.of(ConnectRefusal.DATABASE) : Optional.empty();
    }

    /** The Flyway location of the shipped scripts, without the {@code classpath:} prefix. */
    String schemaLocation();

    /** The shipped scripts with the placeholders filled in, in order. */
    List<String> renderSchemaScripts(OutboxTable table);

    /**
     * The adapter's pieces for one outbox table on a data source.
     *
     * @throws IllegalArgumentException naming the key when the table settings are invalid
     */
    OutboxDatabase open(DataSource dataSource, OutboxTable table);
}
