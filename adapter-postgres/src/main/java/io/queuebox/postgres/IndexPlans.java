package io.queuebox.postgres;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.function.Supplier;
import org.jdbi.v3.core.result.NoResultsException;
import org.jdbi.v3.core.result.ResultBearing;
import org.jdbi.v3.core.result.ResultProducer;
import org.jdbi.v3.core.result.UnableToProduceResultException;
import org.jdbi.v3.core.statement.StatementContext;

/**
 * The store's delivery statements on the outbox, run with PostgreSQL's sequential and bitmap scans switched off for
 * their transaction, so that they keep to the indexes they were written for whatever the table held when they were
 * planned.
 *
 * <p>An outbox is empty or nearly so most of the time: each row is sent and purged soon after it is written, and a
 * vacuum then truncates the table. PostgreSQL plans a prepared statement on a table it believes empty with sequential
 * scans, and keeps that generic plan on the connection until an ANALYZE, DDL or a new connection invalidates it. When
 * a backlog then builds, the plan reads the whole table at every step: an ordered claim of 40,000 rows, whose heads
 * walk looks up each aggregate's first row, took 17.4 s in psql, against 15 ms once replanned.
 *
 * <p>The settings are a statement of their own ahead of the store's, sent in the same round trip, and they end with
 * the transaction ({@code set_config(..., true)}), so they never reach the application's statements on a shared
 * pool. {@code SET LOCAL} would do the same inside a transaction, but warns in the server log in the implicit one an
 * autocommit statement runs in. A held claim's later statements (locking its chosen rows, its outcomes) run in the
 * transaction its first statement set them in.
 */
final class IndexPlans {

    /** Its one row is skipped: the caller's results are those of the statement after it. */
    static final String SETTINGS = "SELECT set_config('enable_seqscan', 'off', true),"
            + " set_config('enable_bitmapscan', 'off', true)";

    private IndexPlans() {
    }

    /** {@code statement}, preceded by the settings. */
    static String under(String statement) {
        return SETTINGS + "; " + statement;
    }

    /** The rows of a query built with {@link #under}. */
    static ResultProducer<ResultBearing> rows() {
        return (statement, context) -> ResultBearing.of(() -> rows(statement, context), context);
    }

    /**
     * The update count of a statement built with {@link #under}. The statement is closed once the count is read, as
     * Jdbi's own update count does, not when its handle closes: a held claim's handle lives as long as its batch.
     */
    static ResultProducer<Integer> updateCount() {
        return (statement, context) -> {
            try {
                PreparedStatement executed = statement.get();
                if (executed.getMoreResults() || executed.getUpdateCount() < 0) {
                    throw new NoResultsException("no update count after the planner settings", context);
                }
                return executed.getUpdateCount();
            } finally {
                context.close();
            }
        };
    }

    private static ResultSet rows(Supplier<PreparedStatement> statement, StatementContext context) {
        try {
            PreparedStatement executed = statement.get();
            if (!executed.getMoreResults()) {
                throw new NoResultsException("no rows after the planner settings", context);
            }
            ResultSet rows = executed.getResultSet();
            context.addCleanable(rows::close);
            return rows;
        } catch (SQLException e) {
            throw new UnableToProduceResultException(e, context);
        }
    }
}
