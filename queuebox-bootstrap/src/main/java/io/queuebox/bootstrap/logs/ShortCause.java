package io.queuebox.bootstrap.logs;

import io.queuebox.embed.config.Masking;
import java.io.EOFException;
import java.net.ConnectException;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * An exception as one short line for a person. Jdbi puts the whole statement and its arguments into its
 * messages (the claim alone is about 1,450 characters), and the driver's own first line is what says what
 * happened, so the line is the SQLState and the driver's message, never SQL, never a secret.
 */
public final class ShortCause {

    /** Long enough for any driver's one-line message, short enough to keep a log line on one screen line. */
    static final int LONGEST = 160;

    private static final Pattern SEVERITY = Pattern.compile("^(FATAL|ERROR|PANIC|WARNING): ");
    // Jdbi appends the statement to its own message and to every message it wraps.
    private static final Pattern STATEMENT = Pattern.compile("\\s*\\[statement:.*", Pattern.DOTALL);

    private ShortCause() {
    }

    /** For example {@code 57P01 terminating connection due to administrator command}. */
    public static String of(Throwable error) {
        if (error == null) {
            return "unknown cause";
        }
        SQLException sql = driverException(error);
        if (sql != null) {
            String state = sql.getSQLState() != null ? sql.getSQLState() : stateOf(error);
            String message = SEVERITY.matcher(firstLine(sql.getMessage())).replaceFirst("");
            return clip((state == null ? "" : state + " ") + message);
        }
        Throwable shown = error;
        // A wrapper that only repeats its cause (new RuntimeException(cause)) says nothing of its own.
        while (shown.getCause() != null && shown.getCause() != shown
                && (shown.getMessage() == null || shown.getMessage().equals(shown.getCause().toString()))) {
            shown = shown.getCause();
        }
        String message = firstLine(shown.getMessage());
        return clip(shown.getClass().getSimpleName() + (message.isEmpty() ? "" : ": " + message));
    }

    /**
     * Whether the exception says the database or broker could not be reached or dropped the connection
     * (refused, reset, terminated by an administrator, shutting down, a pool that found no connection): an
     * outage, told once as "down", rather than a fault of QueueBox or of the data.
     */
    public static boolean isConnectionFault(Throwable error) {
        for (Throwable t = error; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof SQLTransientConnectionException || t instanceof ConnectException
                    || t instanceof SocketException || t instanceof SocketTimeoutException || t instanceof EOFException) {
                return true;
            }
            if (t instanceof SQLException sql && sql.getSQLState() != null) {
                String state = sql.getSQLState().toUpperCase(Locale.ROOT);
                // 08: connection exception; 57P01-57P03: admin shutdown, crash shutdown, cannot connect now.
                if (state.startsWith("08") || state.equals("57P01") || state.equals("57P02") || state.equals("57P03")) {
                    return true;
                }
            }
        }
        return false;
    }

    /** The first line of {@code text} without a Jdbi statement, at most {@code LONGEST} characters, masked. */
    static String clip(String text) {
        String line = firstLine(text);
        if (line.length() > LONGEST) {
            line = line.substring(0, LONGEST - 3) + "...";
        }
        return Masking.maskUrl(line);
    }

    /** The innermost SQLException: the driver's own, under the pool's and Jdbi's wrappers. */
    private static SQLException driverException(Throwable error) {
        SQLException found = null;
        for (Throwable t = error; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof SQLException sql) {
                found = sql;
            }
        }
        return found;
    }

    /** A pool's wrapper may carry the state when the driver's exception does not. */
    private static String stateOf(Throwable error) {
        for (Throwable t = error; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof SQLException sql && sql.getSQLState() != null) {
                return sql.getSQLState();
            }
        }
        return null;
    }

    private static String firstLine(String text) {
        if (text == null) {
            return "";
        }
        String line = STATEMENT.matcher(text).replaceFirst("").strip();
        int end = line.indexOf('\n');
        return (end < 0 ? line : line.substring(0, end)).strip();
    }
}
