package io.queuebox.bootstrap.internal;

import io.queuebox.embed.config.Databases;
import io.queuebox.jdbc.ConnectRefusal;
import com.zaxxer.hikari.HikariDataSource;
import io.queuebox.embed.config.ConfigException;
import io.queuebox.embed.config.ConfigProblem;
import io.queuebox.embed.config.Keys;
import io.queuebox.embed.config.Masking;
import io.queuebox.embed.config.QueueBoxConfig;
import java.net.UnknownHostException;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Waits for the database at start: retries with backoff (250 ms doubling to 5 s) until the deadline. A refused
 * login or a missing database ends the wait at once: waiting does not fix a wrong password.
 */
public final class DatabaseWait {

    private static final Logger LOG = LoggerFactory.getLogger(DatabaseWait.class);
    private static final Duration FIRST_DELAY = Duration.ofMillis(250);
    private static final Duration MAX_DELAY = Duration.ofSeconds(5);
    private static final String ACCOUNT_FIX = "set database.username and database.password (or database.passwordFile)"
            + " to an account the database accepts";

    private DatabaseWait() {
    }

    /**
     * Returns once a connection is valid.
     *
     * @throws DatabaseUnreachableException when none was within {@code deadline}
     * @throws ConfigException when the database refused the login or does not exist
     */
    public static void await(DataSource dataSource, String displayUrl, Duration deadline) {
        await(dataSource, displayUrl, deadline, ConnectionKeys.DATABASE);
    }

    /**
     * The configuration keys a refusal names: those of the account and the location this pool connects with,
     * so that a refused capture login names {@code outbox.capture.connection.username}, not database.username.
     *
     * @param user     the key of the account's user
     * @param password the key of its password
     * @param location the key that says where the pool connects
     */
    public record ConnectionKeys(String user, String password, String location) {

        public static final ConnectionKeys DATABASE = new ConnectionKeys(Keys.DATABASE_USERNAME.name(),
                Keys.DATABASE_PASSWORD.name(), Keys.DATABASE_URL.name());

        String fix() {
            return "set " + user + " and " + password + " to an account the database accepts";
        }
    }

    /** {@link #await(DataSource, String, Duration)}, a refusal naming {@code keys}. */
    public static void await(DataSource dataSource, String displayUrl, Duration deadline, ConnectionKeys keys) {
        long start = System.nanoTime();
        Duration delay = FIRST_DELAY;
        int attempt = 0;
        while (true) {
            attempt++;
            try (Connection connection = dataSource.getConnection()) {
                if (connection.isValid(5)) {
                    if (attempt > 1) {
                        LOG.info("database {} answered after {} attempts", Masking.maskUrl(displayUrl), attempt);
                    }
                    return;
                }
            } catch (SQLException e) {
                SQLException cause = driverCause(e);
                refusal(cause, dataSource, displayUrl, keys).ifPresent(problem -> {
                    throw new ConfigException(List.of(problem));
                });
                Duration waited = Duration.ofNanos(System.nanoTime() - start);
                if (waited.plus(delay).compareTo(deadline) > 0) {
                    throw new DatabaseUnreachableException(Masking.maskUrl(displayUrl) + " did not answer within "
                            + deadline.toMillis() + " ms (startup.databaseWaitMs), " + attempt + " attempts; last error: "
                            + describe(cause) + "; check database.url (host and port) and that the database is"
                            + " running, or raise startup.databaseWaitMs", e);
                }
                LOG.warn("database {} not reachable yet (attempt {}): {}; retrying in {} ms",
                        Masking.maskUrl(displayUrl), attempt, describe(cause), delay.toMillis());
            }
            sleep(delay);
            delay = delay.multipliedBy(2).compareTo(MAX_DELAY) > 0 ? MAX_DELAY : delay.multipliedBy(2);
        }
    }

    /**
     * The driver's own exception behind the pool's: HikariCP answers "Connection is not available, request
     * timed out" and keeps the last failure to connect as the cause, which is what the operator needs.
     */
    static SQLException driverCause(SQLException e) {
        SQLException deepest = e;
        for (Throwable t = e.getCause(); t != null && t != t.getCause(); t = t.getCause()) {
            if (t instanceof SQLException sql) {
                deepest = sql;
            }
        }
        return deepest;
    }

    /** The error in a line: the driver's message, and the network cause it hides ("The connection attempt failed."). */
    static String describe(SQLException e) {
        String message = String.valueOf(e.getMessage());
        for (Throwable t = e.getCause(); t != null && t != t.getCause(); t = t.getCause()) {
            if (t instanceof UnknownHostException) {
                return Masking.maskUrl(message) + " (unknown host " + t.getMessage() + ")";
            }
            if (t instanceof java.io.IOException) {
                return Masking.maskUrl(message) + " (" + t.getClass().getSimpleName() + ": " + t.getMessage() + ")";
            }
        }
        return Masking.maskUrl(message);
    }

    /**
     * A failure that no wait fixes, as the configuration problem it is: the database's adapter says whether the
     * server refused the login or the database (PostgreSQL by SQLSTATE, SQL Server by error number).
     */
    private static java.util.Optional<ConfigProblem> refusal(SQLException e, DataSource dataSource, String displayUrl,
                                                             ConnectionKeys keys) {
        java.util.Optional<ConnectRefusal> refusal = Databases.forUrl(displayUrl).flatMap(database -> database.refusal(e));
        if (refusal.isEmpty()) {
            return java.util.Optional.empty();
        }
        String detail = Masking.maskUrl(String.valueOf(e.getMessage()))
                + (e.getSQLState() != null ? " (SQLSTATE " + e.getSQLState() + ")" : " (error " + e.getErrorCode() + ")");
        String fix = keys.equals(ConnectionKeys.DATABASE) ? ACCOUNT_FIX : keys.fix();
        return java.util.Optional.of(switch (refusal.get()) {
            case PASSWORD -> new ConfigProblem(keys.password(), null, "the database refused the login: " + detail + "; " + fix);
            case ACCOUNT -> new ConfigProblem(keys.user(),
                    dataSource instanceof HikariDataSource pool ? pool.getUsername() : null,
                    "the database refused the login: " + detail + "; " + fix);
            case DATABASE -> new ConfigProblem(keys.location(), Masking.maskUrl(displayUrl),
                    detail + "; create the database or fix its name in " + keys.location());
        });
    }

    private static void sleep(Duration delay) {
        try {
            Thread.sleep(delay.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DatabaseUnreachableException("interrupted while waiting for the database", e);
        }
    }

    /**
     * The keys a refused capture connection names: the capture account's own keys when set, and, for the
     * capture location ({@code source}), the {@code outbox.capture.connection.*} key that moved it.
     */
    public static ConnectionKeys captureKeys(QueueBoxConfig config, boolean source) {
        String user = (config.optional(Keys.CAPTURE_USERNAME).isPresent() ? Keys.CAPTURE_USERNAME : Keys.DATABASE_USERNAME).name();
        String password = (config.optional(Keys.CAPTURE_PASSWORD).isPresent() ? Keys.CAPTURE_PASSWORD : Keys.DATABASE_PASSWORD).name();
        String location = Keys.DATABASE_URL.name();
        if (source) {
            for (var key : java.util.List.of(Keys.CAPTURE_DATABASE, Keys.CAPTURE_HOST, Keys.CAPTURE_PORT)) {
                if (config.optional(key).isPresent()) {
                    location = key.name();
                    break;
                }
            }
        }
        return new ConnectionKeys(user, password, location);
    }
}
